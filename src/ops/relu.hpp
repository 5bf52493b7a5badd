// relu: out = max(x, 0), any shape, f32/f16/bf16.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kReluTarget[] = "cutlax_relu_v1";

struct Relu {
  template <class T>
  CUTE_HOST_DEVICE T operator()(T x) const {
    return kernels::relu(x);
  }
};

template <class Exec>
ffi::Error relu(Exec exec, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", x, "x"));
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "relu", Relu{}, flat_view<T>(out), flat_view<T>(x));
  });
}

}  // namespace cutlax::ops
