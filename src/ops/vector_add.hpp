// vector_add: out = a + b, elementwise, any shape, f32/f16/bf16.
// This handler body is shared by the CUDA kernel (vector_add.cu) and the CPU
// twin (vector_add_cpu.cpp); each instantiates it for its execution context.
#pragma once

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kVectorAddTarget[] = "cutlax_vector_add_v1";

struct Add {
  template <class T>
  CUTE_HOST_DEVICE T operator()(T a, T b) const {
    return from_float<T>(to_float(a) + to_float(b));
  }
};

template <class Exec>
ffi::Error vector_add(Exec exec, ffi::AnyBuffer a, ffi::AnyBuffer b,
                      ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(b, "b", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", a, "a"));
  return dispatch(FloatTypes{}, a.element_type(), "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "vector_add", Add{}, flat_view<T>(out), flat_view<T>(a),
                        flat_view<T>(b));
  });
}

}  // namespace cutlax::ops
