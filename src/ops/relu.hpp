// relu: out = max(x, 0), any shape, f32/f16/bf16; the flat-indexing kernel.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kReluTarget[] = "cutlax_relu_v1";

struct Relu {
  template <class Frag>
  CUTE_HOST_DEVICE void run(Frag& frag, int64_t) const {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(frag); ++i) frag(i) = kernels::relu(frag(i));
  }
  template <class T>
  CUTE_HOST_DEVICE T element(T x, int64_t) const {
    return kernels::relu(x);
  }
};

template <class Exec>
ffi::Error relu(Exec exec, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", x, "x"));
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map_flat(exec, "relu", Relu{}, flat_view<T>(out), flat_view<T>(x));
  });
}

}  // namespace cutlax::ops
