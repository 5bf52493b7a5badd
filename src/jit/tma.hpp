// TMA descriptors as kernel parameters: what Python asks for (the `tma`
// attribute, one fixed-size record per descriptor), the checks a request
// must pass against the real array, and the arguments of
// cuTensorMapEncodeTiled. Pure C++, no FFI or CUDA types: the handler maps
// the array's dtype and calls the driver.
//
// A record is kTmaRecordWords int64 words:
//
//   operand        the array: inputs then outputs, as in launch programs
//   swizzle        bytes: 0 (none), 32, 64 or 128
//   interleave     bytes: 0 (none), 16 or 32
//   l2_promotion   bytes: 0 (none), 64, 128 or 256
//   oob_fill       0: out-of-bounds elements read as zero; 1: as NaN
//   rank           the box's rank, which must be the array's (1 to 5)
//   box[5]         the box's extents in the array's axis order (outermost
//                  first); the words past `rank` are 0
//
// The descriptor covers the whole array as it is at launch: the driver's
// dimension 0 is the array's innermost axis, so dims, strides and box are
// reversed here. A kernel's coordinates are innermost-first in PTX;
// <cutlax/jit/hopper.hpp> takes them in the array's order and reverses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cutlax::jit {

inline constexpr size_t kTmaRecordWords = 11;
inline constexpr size_t kTmaMaxRank = 5;
// More descriptors than any kernel takes; they live on the launch's stack.
inline constexpr size_t kTmaMaxDescriptors = 16;
// sizeof(CUtensorMap): the kernel parameter's size.
inline constexpr size_t kTmaDescriptorBytes = 128;

struct TmaRequest {
  int64_t operand;
  int64_t swizzle;
  int64_t interleave;
  int64_t l2_promotion;
  int64_t oob_fill;
  int64_t rank;
  int64_t box[kTmaMaxRank];
};

// Reads the records; returns an empty string or what is wrong with them
// (the count, an operand out of range, a value outside its set).
std::string parse_tma_requests(const int64_t* words, size_t size, size_t operand_count,
                               TmaRequest* requests, size_t& count);

// The array a descriptor covers, as the handler sees it at launch.
struct TmaArray {
  const void* data;
  const int64_t* dims;  // outermost first
  size_t rank;
  size_t element_bytes;
  int data_type;        // CUtensorMapDataType, or -1 for a dtype TMA cannot move
  bool floating_point;  // NaN fill needs a floating-point type
};

// cuTensorMapEncodeTiled's arguments, innermost dimension first.
struct TmaEncoding {
  int data_type;
  unsigned rank;
  void* address;
  unsigned long long dims[kTmaMaxRank];
  unsigned long long strides[kTmaMaxRank - 1];  // bytes, of dimensions 1..rank-1
  unsigned box[kTmaMaxRank];
  unsigned element_strides[kTmaMaxRank];
  int interleave;  // the driver's enums
  int swizzle;
  int l2_promotion;
  int oob_fill;
};

// Checks `request` against `array` with the driver's rules (box extents 1 to
// 256, the box's inner extent a multiple of 16 bytes and within the swizzle
// span, row pitch a multiple of 16 bytes (32 with 32-byte interleave) and
// under 2^40, dims 1 to 2^32, a 16-byte aligned base (32 with 32-byte
// interleave), interleave only from rank 3) and fills `encoding`. Returns an
// empty string or what is wrong, phrased for a message that names the
// kernel and the descriptor first.
std::string encode_tma_request(const TmaRequest& request, const TmaArray& array,
                               TmaEncoding& encoding);

}  // namespace cutlax::jit
