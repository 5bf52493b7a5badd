// vector_add: out = a + b, elementwise, any shape, f32/f16/bf16.
// The handler body below is shared by the CPU twin and the CUDA kernel; each
// backend supplies its own vector_add_launch.
#pragma once

#include <cutlax/cutlax.hpp>

namespace cutlax::ops {

inline constexpr const char kVectorAddTarget[] = "cutlax_vector_add_v1";

template <class T>
struct Add {
  CUTE_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};

template <class T>
ffi::Error vector_add_launch(Host, Vector<T> out, Vector<const T> a,
                             Vector<const T> b);
template <class T>
ffi::Error vector_add_launch(Cuda, Vector<T> out, Vector<const T> a,
                             Vector<const T> b);

template <class Exec>
ffi::Error vector_add(Exec exec, ffi::AnyBuffer a, ffi::AnyBuffer b,
                      ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(b, "b", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_like(*out, "result", a, "a"));
  return dispatch(FloatTypes{}, a.element_type(), "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return vector_add_launch<T>(exec, flat_view<T>(out), flat_view<T>(a),
                                flat_view<T>(b));
  });
}

}  // namespace cutlax::ops
