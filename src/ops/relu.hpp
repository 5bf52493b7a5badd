// relu: out = max(x, 0), any shape, f32/f16/bf16.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

struct Relu {
  template <class T>
  CUTE_HOST_DEVICE T operator()(T x) const {
    return kernels::relu(x);
  }
};

template <class Exec>
ffi::Error relu(Exec exec, Buffer<FloatTypes> x, ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", x, "x"));
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "relu", Relu{}, flat_view<T>(out), flat_view<T>(x));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_relu_v1", relu, "relu(x) -> out")

}  // namespace cutlax::ops
