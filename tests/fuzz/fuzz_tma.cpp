// Fuzzes the TMA descriptor requests (src/jit/tma.hpp): the records come
// from the `tma` attribute of an exported program and the arrays from XLA's
// buffers, so any words with any array must be encoded or rejected, never
// read out of bounds; what is encoded must satisfy every rule of
// cuTensorMapEncodeTiled that the header lists (the driver itself is not
// called: there is none here).
//
// The input, front to back (past its end every byte reads 0):
//   count     arrays, 1-8 (the byte mod 8, plus 1)
//   arrays    per array: a rank byte (0-8), per dimension a byte (< 0xc0
//             that value, else 8 bytes: any non-negative int64), an element
//             size byte (1, 2, 4 or 8 by its low 2 bits; bit 2: a floating
//             point type; bit 3: a type TMA cannot copy), an address offset
//             byte (the address is 4096 + offset)
//   words     the rest, as fuzz_launch_program reads them
#include <cstdint>
#include <cstdio>
#include <vector>

#include "fuzz_input.hpp"
#include "jit/tma.hpp"

namespace {

using cutlax::jit::TmaArray;
using cutlax::jit::TmaEncoding;
using cutlax::jit::TmaRequest;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "fuzz_tma: %s\n", what);
  __builtin_trap();
}

struct Array {
  std::vector<int64_t> dims;
  size_t element_bytes;
  int data_type;
  bool floating_point;
  uintptr_t address;
};

// What an encoding must satisfy, from tma.hpp's and the driver's rules.
void check(const TmaRequest& request, const Array& array, const TmaEncoding& e) {
  const size_t rank = array.dims.size();
  if (e.rank != rank || rank < 1 || rank > cutlax::jit::kTmaMaxRank) violated("a bad rank");
  if (reinterpret_cast<uintptr_t>(e.address) != array.address) violated("another address");
  const uint64_t alignment = request.interleave == 32 ? 32 : 16;
  if (array.address % alignment != 0) violated("a misaligned base");
  unsigned __int128 stride = array.element_bytes;  // exact: a wrapped stride would pass the checks
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = array.dims[rank - 1 - d];
    if (e.dims[d] != static_cast<uint64_t>(dim) || dim < 1 || e.dims[d] > (uint64_t{1} << 32)) {
      violated("a dimension not the array's, innermost first, 1 to 2^32");
    }
    if (e.box[d] != static_cast<uint64_t>(request.box[rank - 1 - d]) || e.box[d] < 1 ||
        e.box[d] > 256) {
      violated("a box extent not the request's, innermost first, 1 to 256");
    }
    if (e.element_strides[d] != 1) violated("an element stride other than 1");
    if (d + 1 < rank) {
      stride *= static_cast<uint64_t>(dim);
      if (e.strides[d] != stride || stride % alignment != 0 || stride >= (uint64_t{1} << 40)) {
        violated("a stride not row-major, aligned and under 2^40");
      }
    }
  }
  const uint64_t inner = uint64_t{e.box[0]} * array.element_bytes;
  if (request.interleave == 0 && inner % 16 != 0) violated("an inner box not of 16-byte multiples");
  if (request.interleave == 0 && request.swizzle != 0 && inner > uint64_t(request.swizzle)) {
    violated("an inner box wider than the swizzle span");
  }
  if (request.interleave != 0 && rank < 3) violated("interleave below rank 3");
  if (request.oob_fill == 1 && !array.floating_point) violated("NaN fill of an integer type");
  if (e.data_type != array.data_type || e.data_type < 0) violated("another data type");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cutlax::fuzz::FuzzInput in(data, size);
  const size_t count = in.byte() % 8 + 1;
  std::vector<Array> arrays(count);
  for (Array& array : arrays) {
    const size_t rank = in.byte() % 9;
    for (size_t axis = 0; axis < rank; ++axis) {
      const uint8_t b = in.byte();
      array.dims.push_back(b < 0xc0 ? b : in.integer<int64_t>() & INT64_MAX);
    }
    const uint8_t kind = in.byte();
    array.element_bytes = size_t{1} << (kind & 3);
    array.floating_point = (kind & 4) != 0;
    array.data_type = (kind & 8) ? -1 : static_cast<int>(kind & 3);
    array.address = 4096 + in.byte();
  }
  std::vector<int64_t> words;
  while (!in.done()) {
    const uint8_t tag = in.byte();
    words.push_back(tag < 0x80 ? tag : tag < 0xc0 ? -int64_t{tag - 0x7f} : in.integer<int64_t>());
  }

  TmaRequest requests[cutlax::jit::kTmaMaxDescriptors];
  size_t parsed = 0;
  if (!cutlax::jit::parse_tma_requests(words.data(), words.size(), count, requests, parsed)
           .empty()) {
    return 0;
  }
  if (parsed * cutlax::jit::kTmaRecordWords != words.size()) violated("records left unread");
  for (size_t d = 0; d < parsed; ++d) {
    const TmaRequest& request = requests[d];
    if (request.operand < 0 || static_cast<size_t>(request.operand) >= count) {
      violated("an operand out of range was accepted");
    }
    const Array& array = arrays[static_cast<size_t>(request.operand)];
    const TmaArray view{reinterpret_cast<const void*>(array.address),
                        array.dims.data(),
                        array.dims.size(),
                        array.element_bytes,
                        array.data_type,
                        array.floating_point};
    TmaEncoding encoding;
    if (cutlax::jit::encode_tma_request(request, view, encoding).empty()) {
      check(request, array, encoding);
    }
  }
  return 0;
}
