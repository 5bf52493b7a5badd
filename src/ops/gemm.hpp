// gemm (cutlax.gemm for bf16, f16 and f32): c[M, N] = act(a[M, K] @ b[K, N] +
// bias[N]) with float32 accumulation, the bias add and the activation fused
// into the GEMM's epilogue, the result rounded once to the inputs' dtype.
// float32 operands are multiplied as TF32 (tensor cores read the top 19 bits
// of each float; the twin truncates the same way): cutlax.gemm's
// precision="default", and three of these products make "high" (3xTF32).
// On CUDA a CUTLASS 3 SM90 kernel (gemm_sm90.cuh: TMA loads, WGMMA, a
// warp-specialised persistent mainloop, the epilogue as a visitor tree); on
// the host its twin (gemm_cpu.cpp).
//
// Two targets share the code: gemm(a, b, bias) -> c (a bias of length 0:
// none), and gemm_aux, which also writes the pre-activation z = a @ b + bias
// (rounded to the dtype) as a second result for the backward of activations
// whose derivative needs z (gelu). relu's backward needs only c (c > 0
// exactly where z > 0). The attribute "transpose" (GemmTranspose) lets the
// backward's products a @ b.T and a.T @ b read the forward's arrays without
// copies.
#pragma once

#include <cstdint>
#include <cutlax/cutlax.hpp>
#include <limits>

#include "gemm_configs.hpp"

namespace cutlax::ops {

using GemmTypes = DataTypes<ffi::DataType::BF16, ffi::DataType::F16, ffi::DataType::F32>;

// The epilogue's activation: the FFI attribute "activation" (its names reach
// Python through build_info(), gemm_module.cpp). gelu is the tanh form,
// jax.nn.gelu's default: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))).
enum class GemmActivation : int64_t { kNone = 0, kRelu = 1, kGelu = 2 };
inline constexpr const char* kGemmActivationNames[] = {"none", "relu", "gelu"};

struct GemmProblem {
  const void* a;     // (m, k) row-major, or (k, m) for GemmTranspose::kA
  const void* b;     // (k, n) row-major, or (n, k) for GemmTranspose::kB
  const void* bias;  // (n,), or null: no bias (the epilogue adds nothing, reads nothing)
  void* c;           // (m, n) row-major
  void* aux;         // (m, n) row-major, or null: not written
  int64_t m, n, k;
  GemmActivation activation;
  GemmConfig config;
  GemmTranspose transpose;
};

ffi::Error gemm_launch(Host exec, ffi::DataType dtype, const GemmProblem& problem);
ffi::Error gemm_launch(Cuda exec, ffi::DataType dtype, const GemmProblem& problem);

inline constexpr char kGemmActivation[] = "activation";
inline constexpr char kGemmConfig[] = "config";
inline constexpr char kGemmTransposeAttr[] = "transpose";

// The kernels that are built (kGemmKernels), checked on every platform so
// that the twin refuses what the GPU would. "auto" needs some configuration
// of the dtype and form; a name, that one.
inline ffi::Error expect_built_kernel(ffi::DataType dtype, GemmTranspose transpose,
                                      GemmConfig config) {
  auto name = [](GemmTranspose form) { return kGemmTransposeNames[static_cast<int64_t>(form)]; };
  std::string configs;  // what is built for this dtype and form
  bool form_built[kGemmTransposeCount] = {};
  for (const GemmKernel& kernel : kGemmKernels) {
    if (kernel.dtype != dtype) continue;
    form_built[static_cast<int64_t>(kernel.transpose)] = true;
    if (kernel.transpose != transpose) continue;
    if (config == GemmConfig::kAuto || kernel.config == config) return ffi::Error::Success();
    configs += std::string(configs.empty() ? "" : ", ") +
               kGemmConfigNames[static_cast<int64_t>(kernel.config)];
  }
  const std::string dtype_text(dtype_name(dtype));
  if (configs.empty()) {
    std::string forms;
    for (int64_t t = 0; t < kGemmTransposeCount; ++t) {
      if (form_built[t]) forms += std::string(forms.empty() ? "" : ", ") + kGemmTransposeNames[t];
    }
    return invalid_argument("transpose", "must be one of " + forms + " for " + dtype_text +
                                             " (the kernels built: cutlax.ops.gemm.KERNELS), got " +
                                             name(transpose));
  }
  return invalid_argument("config", "must be auto or one of " + configs + " for transpose " +
                                        name(transpose) + " in " + dtype_text + ", got " +
                                        kGemmConfigNames[static_cast<int64_t>(config)]);
}

template <class Exec>
ffi::Error gemm_with(Exec exec, const ffi::AnyBuffer& a, const ffi::AnyBuffer& b,
                     const ffi::AnyBuffer& bias, ffi::Result<ffi::AnyBuffer>& c,
                     ffi::Result<ffi::AnyBuffer>* aux, int64_t activation, int64_t config,
                     int64_t transpose) {
  if (transpose < 0 || transpose >= kGemmTransposeCount) {
    return invalid_argument("transpose",
                            "must be 0 (none), 1 (b) or 2 (a), got " + std::to_string(transpose));
  }
  const auto form = static_cast<GemmTranspose>(transpose);
  CUTLAX_RETURN_IF_ERROR(expect_rank(a, "a", 2));
  CUTLAX_RETURN_IF_ERROR(expect_rank(b, "b", 2));
  const bool a_t = form == GemmTranspose::kA, b_t = form == GemmTranspose::kB;
  const int64_t m = a.dimensions()[a_t ? 1 : 0], k = a.dimensions()[a_t ? 0 : 1];
  const int64_t n = b.dimensions()[b_t ? 0 : 1];
  CUTLAX_RETURN_IF_ERROR(expect_dim(b, "b", b_t ? 1 : 0, k, "a's K"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(b, "b", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(bias, "bias", 1));
  // A bias of length 0 means none: the kernel then reads no bias at all, and
  // a caller without one need not write N zeros first.
  const bool has_bias = bias.dimensions()[0] != 0;
  if (has_bias) CUTLAX_RETURN_IF_ERROR(expect_dim(bias, "bias", 0, n, "b's N (or 0: no bias)"));
  CUTLAX_RETURN_IF_ERROR(expect_same_dtype(bias, "bias", a, "a"));
  CUTLAX_RETURN_IF_ERROR(expect_rank(*c, "result", 2));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 0, m, "a's M"));
  CUTLAX_RETURN_IF_ERROR(expect_dim(*c, "result", 1, n, "b's N"));
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
  CUTLAX_RETURN_IF_ERROR(
      expect_built_kernel(a.element_type(), form, static_cast<GemmConfig>(config)));
  const int64_t row_elements =
      kGemmRowBytes / static_cast<int64_t>(ffi::ByteWidth(a.element_type()));
  for (const auto& [buf, name] :
       {std::pair<const ffi::AnyBuffer*, const char*>{&a, "a"}, {&b, "b"}, {&*c, "result"}}) {
    if (buf->dimensions()[1] % row_elements != 0) {
      return invalid_argument(
          name, "must have rows that are multiples of 16 bytes (" + std::to_string(row_elements) +
                    " elements, for TMA), got shape " + shape_string(buf->dimensions()) +
                    "; cutlax.gemm pads other shapes");
    }
  }
  if (k == 0) {
    return invalid_argument("a", "must have K > 0, got shape " + shape_string(a.dimensions()) +
                                     "; cutlax.gemm pads K = 0");
  }
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax) {
    return invalid_argument("a",
                            "and b must have M, N and K below 2^31 each (the kernel's problem "
                            "shape is 32-bit; offsets are 64-bit), got " +
                                shape_string(a.dimensions()) + " and " +
                                shape_string(b.dimensions()));
  }
  if (m == 0) return ffi::Error::Success();
  const GemmProblem problem{a.untyped_data(),
                            b.untyped_data(),
                            has_bias ? bias.untyped_data() : nullptr,
                            c->untyped_data(),
                            aux != nullptr ? (*aux)->untyped_data() : nullptr,
                            m,
                            n,
                            k,
                            static_cast<GemmActivation>(activation),
                            static_cast<GemmConfig>(config),
                            form};
  return gemm_launch(exec, a.element_type(), problem);
}

template <class Exec>
ffi::Error gemm(Exec exec, Buffer<GemmTypes> a, Buffer<GemmTypes> b, Buffer<GemmTypes> bias,
                ffi::Result<ffi::AnyBuffer> c, ffi::Attr<int64_t, kGemmActivation> activation,
                ffi::Attr<int64_t, kGemmConfig> config,
                ffi::Attr<int64_t, kGemmTransposeAttr> transpose) {
  return gemm_with(exec, a, b, bias, c, nullptr, *activation, *config, *transpose);
}
CUTLAX_OP_TEMPLATE("cutlax_gemm_v1", gemm, "gemm(a, b, bias) -> c")

template <class Exec>
ffi::Error gemm_aux(Exec exec, Buffer<GemmTypes> a, Buffer<GemmTypes> b, Buffer<GemmTypes> bias,
                    ffi::Result<ffi::AnyBuffer> c, ffi::Result<ffi::AnyBuffer> aux,
                    ffi::Attr<int64_t, kGemmActivation> activation,
                    ffi::Attr<int64_t, kGemmConfig> config,
                    ffi::Attr<int64_t, kGemmTransposeAttr> transpose) {
  return gemm_with(exec, a, b, bias, c, &aux, *activation, *config, *transpose);
}
CUTLAX_OP_TEMPLATE("cutlax_gemm_aux_v1", gemm_aux, "gemm_aux(a, b, bias) -> c, aux")

}  // namespace cutlax::ops
