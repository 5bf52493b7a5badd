// CPU twins of the backward passes (see backward.hpp).
#include "backward.hpp"
#include "elementwise_cpu.hpp"

namespace cutlax::kernels {

// One thread walks every row, so one f32 accumulator row suffices: the
// CPU twin sums into partials' first chunk row and leaves the others unused
// (partials is a workspace whose chunk count serves the CUDA grid).
template <class T>
ffi::Error masked_column_sums(Host, Matrix<const T> y, Matrix<const T> g, Matrix<T> dx,
                              Vector<T> dbias, Matrix<float> partials) {
  using namespace cute;
  const int64_t rows = size<0>(y), width = size<1>(y);
  float* sums = &partials(0, 0);
  std::fill(sums, sums + width, 0.0f);
  // Row by row, so the inner loop runs over contiguous columns and vectorises.
  for (int64_t r = 0; r < rows; ++r) {
    const T* y_row = &y(r, 0);
    const T* g_row = &g(r, 0);
    T* dx_row = &dx(r, 0);
    for (int64_t j = 0; j < width; ++j) {
      dx_row[j] = ops::ReluMask<T>{}(y_row[j], g_row[j]);
      sums[j] += float(dx_row[j]);
    }
  }
  for (int64_t j = 0; j < width; ++j) dbias(j) = T(sums[j]);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels

CUTLAX_OP(cutlax::ops::kReluBackwardTarget, cutlax::ops::relu_backward<cutlax::Host>,
          "relu_backward(y, g) -> dx")
CUTLAX_OP(cutlax::ops::kBiasReluBackwardTarget, cutlax::ops::bias_relu_backward<cutlax::Host>,
          "bias_relu_backward(y, g) -> dx, dbias, partials")
