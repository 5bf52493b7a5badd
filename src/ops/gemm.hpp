// gemm (cutlax.gemm for bf16 and f16): c[M, N] = act(a[M, K] @ b[K, N] +
// bias[N]) with float32 accumulation, the bias add and the activation fused
// into the GEMM's epilogue, the result rounded once to the inputs' dtype.
// On CUDA a CUTLASS 3 SM90 kernel (gemm_sm90.cuh: TMA loads, WGMMA, a
// warp-specialised persistent mainloop, the epilogue as a visitor tree); on
// the host its twin (gemm_cpu.cpp).
//
// Two targets share the code: gemm(a, b, bias) -> c, and gemm_aux, which also
// writes the pre-activation z = a @ b + bias (rounded to the dtype) as a
// second result for the backward of activations whose derivative needs z
// (gelu). relu's backward needs only c (c > 0 exactly where z > 0).
#pragma once

#include <cstdint>
#include <cutlax/cutlax.hpp>
#include <limits>

#include "gemm_configs.hpp"

namespace cutlax::ops {

using Float16Types = DataTypes<ffi::DataType::BF16, ffi::DataType::F16>;

// The epilogue's activation: the FFI attribute "activation", in the order of
// cutlax/ops/gemm.py's ACTIVATIONS. gelu is the tanh form, jax.nn.gelu's
// default: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))).
enum class GemmActivation : int64_t { kNone = 0, kRelu = 1, kGelu = 2 };

struct GemmProblem {
  const void* a;     // (m, k) row-major
  const void* b;     // (k, n) row-major
  const void* bias;  // (n,)
  void* c;           // (m, n) row-major
  void* aux;         // (m, n) row-major, or null: not written
  int64_t m, n, k;
  GemmActivation activation;
  GemmConfig config;
};

ffi::Error gemm_launch(Host exec, ffi::DataType dtype, const GemmProblem& problem);
ffi::Error gemm_launch(Cuda exec, ffi::DataType dtype, const GemmProblem& problem);

inline constexpr char kGemmActivation[] = "activation";
inline constexpr char kGemmConfig[] = "config";

template <class Exec>
ffi::Error gemm_with(Exec exec, const ffi::AnyBuffer& a, const ffi::AnyBuffer& b,
                     const ffi::AnyBuffer& bias, ffi::Result<ffi::AnyBuffer>& c,
                     ffi::Result<ffi::AnyBuffer>* aux, int64_t activation, int64_t config) {
  CUTLAX_RETURN_IF_ERROR(expect_rank(a, "a", 2));
  CUTLAX_RETURN_IF_ERROR(expect_rank(b, "b", 2));
  const int64_t m = a.dimensions()[0], k = a.dimensions()[1], n = b.dimensions()[1];
  CUTLAX_RETURN_IF_ERROR(expect_dim(b, "b", 0, k, "a's columns, K"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(b, "b", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(bias, "bias", 1));
  CUTLAX_RETURN_IF_ERROR(expect_dim(bias, "bias", 0, n, "b's columns, N"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(bias, "bias", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(*c, "result", 2));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 0, m, "a's rows, M"));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 1, n, "b's columns, N"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(*c, "result", a, "a"));
  if (aux != nullptr) CUTLAX_RETURN_IF_ERROR(expect_like(**aux, "aux", *c, "result"));
  if (activation < 0 || activation > static_cast<int64_t>(GemmActivation::kGelu)) {
    return invalid_argument(
        "activation", "must be 0 (none), 1 (relu) or 2 (gelu), got " + std::to_string(activation));
  }
  if (config < 0 || config >= kGemmConfigCount) {
    return invalid_argument("config", "must be in [0, " + std::to_string(kGemmConfigCount) +
                                          "), got " + std::to_string(config));
  }
  if (n % kGemmAlignment != 0 || k % kGemmAlignment != 0 || k == 0) {
    return invalid_argument("b",
                            "must have positive N and K that are multiples of 8 (rows of 16 "
                            "bytes for TMA), got shape " +
                                shape_string(b.dimensions()) + "; cutlax.gemm pads other shapes");
  }
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax) {
    return invalid_argument("a",
                            "and b must have M, N and K below 2^31 each (the kernel's problem "
                            "shape is 32-bit; offsets are 64-bit), got " +
                                shape_string(a.dimensions()) + " @ " +
                                shape_string(b.dimensions()));
  }
  if (m == 0) return ffi::Error::Success();
  const GemmProblem problem{a.untyped_data(),
                            b.untyped_data(),
                            bias.untyped_data(),
                            c->untyped_data(),
                            aux != nullptr ? (*aux)->untyped_data() : nullptr,
                            m,
                            n,
                            k,
                            static_cast<GemmActivation>(activation),
                            static_cast<GemmConfig>(config)};
  return gemm_launch(exec, a.element_type(), problem);
}

template <class Exec>
ffi::Error gemm(Exec exec, Buffer<Float16Types> a, Buffer<Float16Types> b,
                Buffer<Float16Types> bias, ffi::Result<ffi::AnyBuffer> c,
                ffi::Attr<int64_t, kGemmActivation> activation,
                ffi::Attr<int64_t, kGemmConfig> config) {
  return gemm_with(exec, a, b, bias, c, nullptr, *activation, *config);
}
CUTLAX_OP_TEMPLATE("cutlax_gemm_v1", gemm, "gemm(a, b, bias) -> c")

template <class Exec>
ffi::Error gemm_aux(Exec exec, Buffer<Float16Types> a, Buffer<Float16Types> b,
                    Buffer<Float16Types> bias, ffi::Result<ffi::AnyBuffer> c,
                    ffi::Result<ffi::AnyBuffer> aux, ffi::Attr<int64_t, kGemmActivation> activation,
                    ffi::Attr<int64_t, kGemmConfig> config) {
  return gemm_with(exec, a, b, bias, c, &aux, *activation, *config);
}
CUTLAX_OP_TEMPLATE("cutlax_gemm_aux_v1", gemm_aux, "gemm_aux(a, b, bias) -> c, aux")

}  // namespace cutlax::ops
