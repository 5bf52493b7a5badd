// FFI buffers as CuTe tensors: a tensor is a pointer plus a layout. The bridge
// supplies the pointer (typed, tagged as global memory so CuTe picks the right
// copy paths on device) and a default row-major layout; an op may pass any
// other layout to reinterpret the same memory (e.g. a 1-D array viewed as
// (elements_per_thread, threads_per_block, num_blocks)). Works on host and
// device: the same views feed the CUDA kernels and the CPU twins.
#pragma once

#include <cstdint>
#include <cute/tensor.hpp>
#include <utility>

#include "cutlax/ffi.hpp"

namespace cutlax {

// The two shapes every built-in op passes to its launchers.
// A flat run of `n` contiguous elements.
using VectorLayout = cute::Layout<cute::Shape<int64_t>, cute::Stride<cute::_1>>;
// A row-major (rows, cols) matrix with a runtime leading dimension.
using MatrixLayout = cute::Layout<cute::Shape<int64_t, int64_t>, cute::Stride<int64_t, cute::_1>>;

template <class T, class Layout>
using GlobalTensor = cute::Tensor<cute::ViewEngine<cute::gmem_ptr<T*>>, Layout>;
template <class T>
using Vector = GlobalTensor<T, VectorLayout>;
template <class T>
using Matrix = GlobalTensor<T, MatrixLayout>;

// True when `p` may be read with 16-byte (128-bit) vector accesses.
inline bool is_aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

inline int64_t element_count(const ffi::AnyBuffer& buf) {
  int64_t n = 1;
  for (int64_t d : buf.dimensions()) n *= d;
  return n;
}

// A view of an operand (read-only) or a result (writable) with any layout.
template <class T, class Layout>
auto view(const ffi::AnyBuffer& buf, Layout layout) {
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<const T*>(buf.untyped_data())),
                           std::move(layout));
}
template <class T, class Layout>
auto view(ffi::Result<ffi::AnyBuffer>& buf, Layout layout) {
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<T*>(buf->untyped_data())),
                           std::move(layout));
}

inline VectorLayout vector_layout(int64_t n) { return cute::make_layout(cute::make_shape(n)); }
inline MatrixLayout matrix_layout(int64_t rows, int64_t cols) {
  return cute::make_layout(cute::make_shape(rows, cols), cute::make_stride(cols, cute::_1{}));
}

// The whole buffer as one flat row-major run, whatever its rank.
template <class T>
auto flat_view(const ffi::AnyBuffer& buf) {
  return view<T>(buf, vector_layout(element_count(buf)));
}
template <class T>
auto flat_view(ffi::Result<ffi::AnyBuffer>& buf) {
  return view<T>(buf, vector_layout(element_count(*buf)));
}

// Rank >= 1 buffers as a row-major matrix: every leading axis folds into rows,
// the last axis is the columns (how bias_relu and the GEMM see their inputs).
inline MatrixLayout matrix_layout(const ffi::AnyBuffer& buf) {
  auto dims = buf.dimensions();
  int64_t rows = 1, cols = 1;
  for (size_t i = 0; i < dims.size(); ++i) (i + 1 < dims.size() ? rows : cols) *= dims[i];
  return matrix_layout(rows, cols);
}
template <class T>
auto matrix_view(const ffi::AnyBuffer& buf) {
  return view<T>(buf, matrix_layout(buf));
}
template <class T>
auto matrix_view(ffi::Result<ffi::AnyBuffer>& buf) {
  return view<T>(buf, matrix_layout(*buf));
}

}  // namespace cutlax
