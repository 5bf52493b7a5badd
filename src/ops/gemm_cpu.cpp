// gemm's CPU twin: the operands widened to float32 in the untransposed
// layout (float32 cut to TF32, as the tensor cores read it), the product by
// the tiled GEMM's host kernel (gemm_tiled_cpu.cpp: every output sums its K
// products in order), then the GPU epilogue's arithmetic per element: z =
// acc + bias[n] in float, aux = z rounded, c = act(z) rounded once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "gemm.hpp"
#include "gemm_tiled.hpp"

namespace cutlax::ops {
namespace {

float gelu_tanh(float z) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * z * (1.0f + std::tanh(kSqrt2OverPi * (z + 0.044715f * z * z * z)));
}

float activate(GemmActivation activation, float z) {
  switch (activation) {
    case GemmActivation::kRelu:
      return std::isnan(z) || z > 0.0f ? z : 0.0f;  // NaN kept, as jax.nn.relu keeps it
    case GemmActivation::kGelu:
      return gelu_tanh(z);
    case GemmActivation::kNone:
      break;
  }
  return z;
}

// TF32 as WGMMA reads a float32 operand: its low 13 mantissa bits ignored.
// A NaN stays a NaN: cutting a payload that lies only in those bits would
// leave an infinity (found by tests/python/test_gemm_properties.py; the tensor
// cores give NaN).
float tf32(float x) {
  if (x != x) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0xffffe000u;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

// A rows x cols operand as float32, row-major; `transposed`: the data holds
// it as cols x rows, and is read in bands of kBand rows of the result, so
// that both the reads (kBand consecutive values of a stored row) and the
// writes (kBand result rows, each filled a cache line at a time) stay in
// cache instead of one of them striding through memory.
template <class T>
std::vector<float> widened(Host& exec, const void* data, int64_t rows, int64_t cols,
                           bool transposed) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const T* in = static_cast<const T*>(data);
  auto put = [&](int64_t r, int64_t c, T x) {
    const float f = to_float(x);
    out[r * cols + c] = std::is_same_v<T, float> ? tf32(f) : f;
  };
  if (!transposed) {
    exec.parallel_for(rows, [&](int64_t r) {
      for (int64_t c = 0; c < cols; ++c) put(r, c, in[r * cols + c]);
    });
    return out;
  }
  constexpr int64_t kBand = 64;
  exec.parallel_for(ceil_div(rows, kBand), [&](int64_t band) {
    const int64_t first = band * kBand, last = std::min(rows, first + kBand);
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t r = first; r < last; ++r) put(r, c, in[c * rows + r]);
    }
  });
  return out;
}

template <class T>
ffi::Error gemm_host(Host& exec, const GemmProblem& p) {
  const std::vector<float> a = widened<T>(exec, p.a, p.m, p.k, p.transpose == GemmTranspose::kA);
  const std::vector<float> b = widened<T>(exec, p.b, p.k, p.n, p.transpose == GemmTranspose::kB);
  std::vector<float> acc(static_cast<size_t>(p.m * p.n));
  const Matrix<float> c_view =
      cute::make_tensor(cute::make_gmem_ptr(acc.data()), matrix_layout(p.m, p.n));
  const Matrix<const float> a_view =
      cute::make_tensor(cute::make_gmem_ptr(a.data()), matrix_layout(p.m, p.k));
  const GemmB b_view = cute::make_tensor(
      cute::make_gmem_ptr(b.data()),
      cute::make_layout(cute::make_shape(p.n, p.k), cute::make_stride(cute::_1{}, p.n)));
  CUTLAX_RETURN_IF_ERROR(gemm_tiled_launch(exec, c_view, a_view, b_view));

  const T* bias = static_cast<const T*>(p.bias);
  T* c = static_cast<T*>(p.c);
  T* aux = static_cast<T*>(p.aux);
  exec.parallel_for(p.m, [&](int64_t row) {
    for (int64_t col = 0; col < p.n; ++col) {
      const int64_t i = row * p.n + col;
      const float z = acc[i] + (bias != nullptr ? to_float(bias[col]) : 0.0f);
      if (aux != nullptr) aux[i] = from_float<T>(z);
      c[i] = from_float<T>(activate(p.activation, z));
    }
  });
  return ffi::Error::Success();
}

}  // namespace

ffi::Error gemm_launch(Host exec, ffi::DataType dtype, const GemmProblem& problem) {
  return dispatch(GemmTypes{}, dtype, "a",
                  [&](auto tag) { return gemm_host<typename decltype(tag)::type>(exec, problem); });
}

}  // namespace cutlax::ops
