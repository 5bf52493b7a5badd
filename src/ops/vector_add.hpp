// vector_add: out = a + b, elementwise, any shape, f32/f16/bf16.
// The handler is written once for both backends: vector_add.cu instantiates it
// for CUDA and vector_add_cpu.cpp for the host, each with its definition of
// the shared elementwise kernel.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

struct Add {
  template <class T>
  CUTE_HOST_DEVICE T operator()(T a, T b) const {
    return from_float<T>(to_float(a) + to_float(b));
  }
};

template <class Exec>
ffi::Error vector_add(Exec exec, Buffer<FloatTypes> a, Buffer<FloatTypes> b,
                      ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(b, "b", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", a, "a"));
  return dispatch(FloatTypes{}, a.element_type(), "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "vector_add", Add{}, flat_view<T>(out), flat_view<T>(a),
                        flat_view<T>(b));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_vector_add_v1", vector_add, "vector_add(a, b) -> out")

}  // namespace cutlax::ops
