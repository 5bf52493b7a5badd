// FFI buffers as CuTe tensors: a tensor is a pointer plus a layout. The bridge
// supplies the pointer (typed, tagged as global memory so CuTe picks the right
// copy paths on device) and a default row-major layout; an op may pass any
// other layout to reinterpret the same memory (e.g. a 1-D array viewed as
// (elements_per_thread, threads_per_block, num_blocks)). Works on host and
// device: the same views feed the CUDA kernels and the CPU twins. The typed
// launcher parameters In<T>, Out<T>, Scratch<T> and Buffer<Types> are these
// views of the call's buffers.
#pragma once

#include <cstdint>
#include <cute/tensor.hpp>
#include <utility>

#include "cutlax/dtype.hpp"
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

// An operand or result as a typed array: its dimensions and CuTe views of its
// memory. T is const for operands.
template <class T>
class TensorArg {
 public:
  explicit TensorArg(ffi::AnyBuffer buffer) : buffer_(buffer) {}
  T* data() const { return static_cast<T*>(buffer_.untyped_data()); }
  ffi::Span<const int64_t> dims() const { return buffer_.dimensions(); }
  int64_t rank() const { return static_cast<int64_t>(dims().size()); }
  // dim(-1) is the last axis.
  int64_t dim(int64_t axis) const { return dims()[axis < 0 ? axis + rank() : axis]; }
  int64_t size() const { return element_count(buffer_); }
  // The whole array as one flat run.
  Vector<T> flat() const { return view(vector_layout(size())); }
  // Rank >= 1: every leading axis folded into rows, the last axis the columns.
  Matrix<T> matrix() const { return view(matrix_layout(buffer_)); }
  // Any other CuTe layout over the same memory.
  template <class Layout>
  auto view(Layout layout) const {
    return cute::make_tensor(cute::make_gmem_ptr(data()), std::move(layout));
  }
  const ffi::AnyBuffer& buffer() const { return buffer_; }

 private:
  ffi::AnyBuffer buffer_;
};

// The parameter types an op's launcher takes for its arrays (op.hpp). Each
// binds as a plain FFI buffer; the element type it declares is checked before
// the launcher runs and is part of the op's signature for Python.
//   In<T>          an operand of element type T
//   Out<T>         a result of element type T
//   Scratch<T>     a result used as working memory: XLA allocates it ahead of
//                  time (so the launcher stays capturable in a CUDA graph) and
//                  the Python op drops it from what it returns
//   Buffer<Types>  an operand whose element type is one of Types (a DataTypes
//                  set), for ops that dispatch on it; it is an ffi::AnyBuffer
template <class T>
struct In : TensorArg<const T> {
  In(ffi::AnyBuffer buffer) : TensorArg<const T>(buffer) {}  // NOLINT: decoded from the call
};

template <class T>
struct Out : TensorArg<T> {
  Out(ffi::Result<ffi::AnyBuffer> result) : TensorArg<T>(*result) {}  // NOLINT: as above
};

template <class T>
struct Scratch : TensorArg<T> {
  Scratch(ffi::Result<ffi::AnyBuffer> result) : TensorArg<T>(*result) {}  // NOLINT: as above
};

template <class Types>
struct Buffer : ffi::AnyBuffer {
  Buffer(ffi::AnyBuffer buffer) : ffi::AnyBuffer(buffer) {}  // NOLINT: as above
};

}  // namespace cutlax

namespace xla::ffi {
template <class T>
struct ArgBinding<cutlax::In<T>> {
  using Arg = AnyBuffer;
};
template <class Types>
struct ArgBinding<cutlax::Buffer<Types>> {
  using Arg = AnyBuffer;
};
template <class T>
struct RetBinding<cutlax::Out<T>> {
  using Ret = AnyBuffer;
};
template <class T>
struct RetBinding<cutlax::Scratch<T>> {
  using Ret = AnyBuffer;
};
}  // namespace xla::ffi
