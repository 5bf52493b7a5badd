#include "tma.hpp"

#include <cstdint>

namespace cutlax::jit {
namespace {

constexpr int64_t kMaxBoxExtent = 256;
constexpr uint64_t kMaxDim = uint64_t{1} << 32;
constexpr uint64_t kMaxStrideBytes = uint64_t{1} << 40;

// The driver's enum value of a byte count from `allowed` (its index), or -1.
template <size_t N>
int enum_of(int64_t bytes, const int64_t (&allowed)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (allowed[i] == bytes) return static_cast<int>(i);
  }
  return -1;
}
constexpr int64_t kSwizzles[] = {0, 32, 64, 128};
constexpr int64_t kInterleaves[] = {0, 16, 32};
constexpr int64_t kL2Promotions[] = {0, 64, 128, 256};

std::string shape_text(const int64_t* dims, size_t rank) {
  std::string text = "(";
  for (size_t i = 0; i < rank; ++i) {
    text += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return text + (rank == 1 ? ",)" : ")");
}

}  // namespace

std::string parse_tma_requests(const int64_t* words, size_t size, size_t operand_count,
                               TmaRequest* requests, size_t& count) {
  count = 0;
  if (size % kTmaRecordWords != 0) {
    return "the tma attribute has " + std::to_string(size) + " words, not a multiple of " +
           std::to_string(kTmaRecordWords);
  }
  if (size / kTmaRecordWords > kTmaMaxDescriptors) {
    return "the kernel asks for " + std::to_string(size / kTmaRecordWords) +
           " TMA descriptors; at most " + std::to_string(kTmaMaxDescriptors) + " are supported";
  }
  for (size_t d = 0; d < size / kTmaRecordWords; ++d) {
    const int64_t* w = words + d * kTmaRecordWords;
    TmaRequest& r = requests[d];
    r = {w[0], w[1], w[2], w[3], w[4], w[5], {w[6], w[7], w[8], w[9], w[10]}};
    const std::string name = "tma[" + std::to_string(d) + "]";
    if (r.operand < 0 || static_cast<uint64_t>(r.operand) >= operand_count) {
      return name + " names array " + std::to_string(r.operand) + "; the kernel has " +
             std::to_string(operand_count) + " arrays";
    }
    if (enum_of(r.swizzle, kSwizzles) < 0) {
      return name + ": swizzle is " + std::to_string(r.swizzle) + "; it must be 0, 32, 64 or 128";
    }
    if (enum_of(r.interleave, kInterleaves) < 0) {
      return name + ": interleave is " + std::to_string(r.interleave) + "; it must be 0, 16 or 32";
    }
    if (enum_of(r.l2_promotion, kL2Promotions) < 0) {
      return name + ": l2_promotion is " + std::to_string(r.l2_promotion) +
             "; it must be 0, 64, 128 or 256";
    }
    if (r.oob_fill != 0 && r.oob_fill != 1) {
      return name + ": oob_fill is " + std::to_string(r.oob_fill) + "; it must be 0 or 1";
    }
    if (r.rank < 1 || static_cast<size_t>(r.rank) > kTmaMaxRank) {
      return name + ": the box has rank " + std::to_string(r.rank) + "; TMA takes 1 to " +
             std::to_string(kTmaMaxRank);
    }
    for (int64_t axis = 0; axis < r.rank; ++axis) {
      if (r.box[axis] < 1 || r.box[axis] > kMaxBoxExtent) {
        return name + ": box[" + std::to_string(axis) + "] is " + std::to_string(r.box[axis]) +
               "; it must be 1 to " + std::to_string(kMaxBoxExtent);
      }
    }
    ++count;
  }
  return {};
}

std::string encode_tma_request(const TmaRequest& request, const TmaArray& array,
                               TmaEncoding& encoding) {
  const std::string array_name = "array x" + std::to_string(request.operand) + " of shape " +
                                 shape_text(array.dims, array.rank);
  if (array.data_type < 0) {
    return array_name +
           " has a dtype TMA cannot copy (it takes 8- to 64-bit integers, float16, "
           "bfloat16, float32 and float64)";
  }
  if (static_cast<size_t>(request.rank) != array.rank) {
    return "the box has rank " + std::to_string(request.rank) + " but " + array_name +
           " has rank " + std::to_string(array.rank);
  }
  if (request.interleave != 0 && array.rank < 3) {
    return "interleave needs an array of rank 3 or more; " + array_name + " has rank " +
           std::to_string(array.rank);
  }
  if (request.oob_fill == 1 && !array.floating_point) {
    return "oob_fill='nan' needs a floating-point array; " + array_name + " is not";
  }
  const size_t rank = array.rank;
  const int64_t inner_box_bytes = request.box[rank - 1] * static_cast<int64_t>(array.element_bytes);
  if (request.interleave == 0 && inner_box_bytes % 16 != 0) {
    return "the box's innermost extent (" + std::to_string(request.box[rank - 1]) + " x " +
           std::to_string(array.element_bytes) + " bytes = " + std::to_string(inner_box_bytes) +
           " bytes) must be a multiple of 16 bytes";
  }
  if (request.interleave == 0 && request.swizzle != 0 && inner_box_bytes > request.swizzle) {
    return "the box's innermost extent is " + std::to_string(inner_box_bytes) +
           " bytes, more than the " + std::to_string(request.swizzle) + "-byte swizzle span";
  }
  for (size_t axis = 0; axis < rank; ++axis) {
    if (array.dims[axis] < 1 || static_cast<uint64_t>(array.dims[axis]) > kMaxDim) {
      return array_name + ": TMA needs every dimension from 1 to 2^32";
    }
  }
  const uint64_t address = reinterpret_cast<uintptr_t>(array.data);
  const uint64_t alignment = request.interleave == 32 ? 32 : 16;
  if (address % alignment != 0) {
    return array_name + " starts at an address that is not " + std::to_string(alignment) +
           "-byte aligned";
  }
  // Row-major strides in bytes, innermost first; stride i belongs to the
  // driver's dimension i + 1.
  uint64_t stride = array.element_bytes;
  for (size_t d = 0; d + 1 < rank; ++d) {
    const size_t axis = rank - 1 - d;  // the array axis of the driver's dimension d
    // A wrapped product could pass the checks below: dims are < 2^33 and the
    // stride so far < 2^40, so the product can exceed 64 bits.
    if (__builtin_mul_overflow(stride, static_cast<uint64_t>(array.dims[axis]), &stride)) {
      stride = kMaxStrideBytes;
    }
    if (stride % alignment != 0) {
      return array_name + ": its rows are " + std::to_string(stride) +
             " bytes apart; TMA needs a multiple of " + std::to_string(alignment) +
             " (pad the innermost axis to a multiple of " +
             std::to_string(alignment / array.element_bytes) + " elements)";
    }
    if (stride >= kMaxStrideBytes) {
      return array_name + ": its stride along axis " + std::to_string(axis - 1) + " is " +
             std::to_string(stride) + " bytes; TMA allows less than 2^40";
    }
    encoding.strides[d] = stride;
  }
  encoding.data_type = array.data_type;
  encoding.rank = static_cast<unsigned>(rank);
  encoding.address = const_cast<void*>(array.data);
  for (size_t d = 0; d < rank; ++d) {
    const size_t axis = rank - 1 - d;
    encoding.dims[d] = static_cast<unsigned long long>(array.dims[axis]);
    encoding.box[d] = static_cast<unsigned>(request.box[axis]);
    encoding.element_strides[d] = 1;
  }
  encoding.interleave = enum_of(request.interleave, kInterleaves);
  encoding.swizzle = enum_of(request.swizzle, kSwizzles);
  encoding.l2_promotion = enum_of(request.l2_promotion, kL2Promotions);
  encoding.oob_fill = static_cast<int>(request.oob_fill);
  return {};
}

}  // namespace cutlax::jit
