// A kernel's array parameters, built on the host: for an array of rank R,
// the bytes of the cutlax::jit::Tensor<T, R> the kernel declares, made with
// the very header NVRTC compiled (include/cutlax/jit/tensor.hpp) so host and
// device agree on the layout. The element type only types the pointer, so one
// host type per rank serves every dtype.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cutlax::jit {

inline constexpr size_t kMaxRank = 8;

// Room for the largest Tensor (rank 8: 8 extents, 7 strides, a pointer).
struct TensorParam {
  alignas(8) unsigned char bytes[128];
  size_t size;
};

// sizeof(cutlax::jit::Tensor<T, rank>) for any T: 8 for rank 0, 16 * rank after.
size_t tensor_param_size(size_t rank);

// The kernel parameter for the array at `data` with `rank` dimensions `dims`
// (outermost first, rank <= kMaxRank).
TensorParam make_tensor_param(void* data, const int64_t* dims, size_t rank);

}  // namespace cutlax::jit
