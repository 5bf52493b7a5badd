// The prelude of every cutlax.jit kernel: NVRTC compiles it before the
// user's source, and the extension includes the same file on the host to
// build the kernel's tensor parameters byte for byte (src/jit/tensor_param.cpp).
//
//   cutlax::jit::Tensor<T, Rank>  an array of rank Rank as a cute::Tensor over
//                                 global memory: its run-time shape (int64 per
//                                 axis) and row-major strides, the innermost
//                                 a static cute::_1 so CuTe can vectorise.
//   cutlax::jit::flat(x)          the same array as one run of size(x) elements.
//   cutlax::jit::cdiv(a, b)       ceil(a / b) for a >= 0, b > 0.
//
// A kernel takes one Tensor<const T, Rank> per input and one Tensor<T, Rank>
// per output, in order, by value. A 0-d array (how a dynamic scalar arrives)
// is Tensor<T, 0>: a single element with the static layout (_1):(_0), read
// as x(0). Note that CuTe reads a single integer coordinate into a tensor of
// rank >= 2 column-major (x(i) walks the first axis fastest); index the
// array's elements in memory order with flat(x)(i).
//
// Only the tensor views are included (<cute/tensor_impl.hpp>, about half the
// front-end time of <cute/tensor.hpp>); a kernel that uses CuTe's copy or MMA
// algorithms includes <cute/tensor.hpp> or the algorithm headers itself.
#pragma once

// No standard headers: NVRTC has none; CuTe brings int64_t and the
// sequence and trait utilities used here, on the host and under NVRTC.
#include <cute/tensor_impl.hpp>

namespace cutlax::jit {

namespace detail {

template <class Axes>
struct RowMajor;

// Rank 0: one element, so a kernel reads a 0-d array as x(0).
template <>
struct RowMajor<cute::int_sequence<>> {
  using type = cute::Layout<cute::Shape<cute::_1>, cute::Stride<cute::_0>>;
  CUTE_HOST_DEVICE static type make(const int64_t*) { return {}; }
};

template <int... Axes>
struct RowMajor<cute::int_sequence<Axes...>> {
  static constexpr int kRank = sizeof...(Axes);
  template <int>
  using Extent = int64_t;
  // Strides of the leading axes are run-time values; the innermost is _1.
  template <int Axis>
  using StrideOf = cute::conditional_t<Axis + 1 == kRank, cute::_1, int64_t>;
  using type = cute::Layout<cute::Shape<Extent<Axes>...>, cute::Stride<StrideOf<Axes>...>>;

  template <int Axis>
  CUTE_HOST_DEVICE static StrideOf<Axis> stride(const int64_t* strides) {
    if constexpr (Axis + 1 == kRank) {
      return {};
    } else {
      return strides[Axis];
    }
  }

  CUTE_HOST_DEVICE static type make(const int64_t* dims) {
    int64_t strides[kRank];
    int64_t stride = 1;
    for (int axis = kRank - 1; axis >= 0; --axis) {
      strides[axis] = stride;
      stride *= dims[axis];
    }
    return type(cute::Shape<Extent<Axes>...>(dims[Axes]...),
                cute::Stride<StrideOf<Axes>...>(RowMajor::stride<Axes>(strides)...));
  }
};

}  // namespace detail

// The layout of a row-major array of rank Rank.
template <int Rank>
using RowMajorLayout = typename detail::RowMajor<cute::make_int_sequence<Rank>>::type;

template <class T, int Rank>
using Tensor = cute::Tensor<cute::ViewEngine<cute::gmem_ptr<T*>>, RowMajorLayout<Rank>>;

// The view of `rank` dimensions `dims` (outermost first) at `data`.
template <int Rank, class T>
CUTE_HOST_DEVICE Tensor<T, Rank> make_row_major_tensor(T* data, const int64_t* dims) {
  return cute::make_tensor(cute::make_gmem_ptr(data),
                           detail::RowMajor<cute::make_int_sequence<Rank>>::make(dims));
}

// All of `x` as one contiguous run in memory order.
template <class Engine, class Layout>
CUTE_HOST_DEVICE auto flat(const cute::Tensor<Engine, Layout>& x) {
  return cute::make_tensor(x.data(), cute::make_layout(cute::make_shape(int64_t(cute::size(x)))));
}

// The host builds these exact bytes as the kernel parameter: for rank 0 the
// pointer alone; for rank >= 1 the layout (the extents, then the leading
// strides), then the pointer. NVRTC and g++ must agree, so both check.
static_assert(sizeof(Tensor<float, 0>) == 8, "rank-0 cutlax::jit::Tensor is one pointer");
static_assert(sizeof(Tensor<float, 1>) == 16, "rank-1 cutlax::jit::Tensor layout changed");
static_assert(sizeof(Tensor<float, 3>) == 48, "rank-3 cutlax::jit::Tensor layout changed");
static_assert(sizeof(Tensor<float, 8>) == 128, "rank-8 cutlax::jit::Tensor layout changed");
static_assert(alignof(Tensor<float, 2>) == 8, "cutlax::jit::Tensor is 8-byte aligned");

CUTE_HOST_DEVICE constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace cutlax::jit
