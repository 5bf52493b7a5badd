// saxpy: out = alpha * x + y, f32/f16/bf16 (arithmetic in f32), same 3-D view
// kernel as vector_add. Two targets:
//   cutlax_saxpy_v1          alpha is an FFI attribute: a compile-time
//                            constant of the XLA program (a new value is a
//                            new compilation).
//   cutlax_saxpy_dynamic_v1  alpha is a 0-d float32 operand read from device
//                            memory, so a traced alpha works.
#pragma once

#include <cmath>

#include "elementwise.hpp"

namespace cutlax::ops {

inline constexpr const char kAlpha[] = "alpha";

struct Axpy {
  float alpha;
  template <class T>
  CUTE_HOST_DEVICE T operator()(T x, T y) const {
    // One rounding of alpha * x + y, everywhere: nvcc contracts the
    // expression to an FMA, but a host compiler does so only where the ISA
    // it targets has one (CUTLAX_HOST_LOOP's AVX2 clone, not the baseline
    // loop that finishes an array's tail), so the position of an element
    // changed its result (found by the property tests, tests/python/test_saxpy.py).
    return from_float<T>(fmaf(alpha, to_float(x), to_float(y)));
  }
};

// alpha lives in device memory (host memory for the CPU twin); every thread
// reads the same word, which the cache serves.
struct AxpyFromMemory {
  const float* alpha;
  template <class T>
  CUTE_HOST_DEVICE T operator()(T x, T y) const {
    return Axpy{*alpha}(x, y);
  }
};

inline ffi::Error check_saxpy(const ffi::AnyBuffer& x, const ffi::AnyBuffer& y,
                              ffi::Result<ffi::AnyBuffer>& out) {
  CUTLAX_RETURN_IF_ERROR(expect_like(y, "y", x, "x"));
  return expect_like(*out, "result", x, "x");
}

template <class Exec>
ffi::Error saxpy(Exec exec, Buffer<FloatTypes> x, Buffer<FloatTypes> y,
                 ffi::Result<ffi::AnyBuffer> out, ffi::Attr<float, kAlpha> alpha) {
  CUTLAX_RETURN_IF_ERROR(check_saxpy(x, y, out));
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "saxpy", Axpy{*alpha}, flat_view<T>(out), flat_view<T>(x),
                        flat_view<T>(y));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_saxpy_v1", saxpy, "saxpy(x, y) -> out")

template <class Exec>
ffi::Error saxpy_dynamic(Exec exec, In<float> alpha, Buffer<FloatTypes> x, Buffer<FloatTypes> y,
                         ffi::Result<ffi::AnyBuffer> out) {
  CUTLAX_RETURN_IF_ERROR(expect_rank(alpha.buffer(), "alpha", 0));
  CUTLAX_RETURN_IF_ERROR(check_saxpy(x, y, out));
  return dispatch(FloatTypes{}, x.element_type(), "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return kernels::map(exec, "saxpy", AxpyFromMemory{alpha.data()}, flat_view<T>(out),
                        flat_view<T>(x), flat_view<T>(y));
  });
}
CUTLAX_OP_TEMPLATE("cutlax_saxpy_dynamic_v1", saxpy_dynamic, "saxpy_dynamic(alpha, x, y) -> out")

}  // namespace cutlax::ops
