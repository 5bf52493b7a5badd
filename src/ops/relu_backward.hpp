// relu_backward: relu's reverse-mode step, dx = g where y > 0, else 0, from
// the forward result y and the cotangent g (y > 0 exactly where the forward
// input was > 0, so y is the only residual it needs). f32/f16/bf16.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

struct ReluMask {
  // g where y > 0, else 0, as a float. The select is on floats (and rounding
  // it back is exact: g is already a T) so that host loops vectorise; a ?:
  // over 16-bit class objects stays a branch.
  template <class T>
  CUTE_HOST_DEVICE float masked(T y, T g) const {
    const float gradient = to_float(g);
    return to_float(y) > 0.0f ? gradient : 0.0f;
  }
  template <class T>
  CUTE_HOST_DEVICE T operator()(T y, T g) const {
    return from_float<T>(masked(y, g));
  }
};

template <class Exec>
ffi::Error relu_backward(Exec exec, Buffer<FloatTypes> y, Buffer<FloatTypes> g,
                         ffi::Result<ffi::AnyBuffer> dx) {
  CUTLAX_RETURN_IF_ERROR(expect_like(g, "g", y, "y"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*dx, "dx", y, "y"));
  return dispatch(FloatTypes{}, y.element_type(), "y", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "relu_backward", ReluMask{}, flat_view<T>(dx), flat_view<T>(y),
                        flat_view<T>(g));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_relu_backward_v1", relu_backward, "relu_backward(y, g) -> dx")

}  // namespace cutlax::ops
