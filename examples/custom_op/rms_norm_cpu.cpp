// The CPU twin: the same op on the host, rows spread over XLA:CPU's threads.
#include <algorithm>
#include <cmath>

#include "rms_norm.hpp"

// Rows [first, end) of a (rows, width) array. The sizes are parameters, not
// captured variables: through a capture, every store to y might change them
// as far as the compiler knows, and the loops would not vectorise. Eight
// partial sums let the sum of squares vectorise too.
CUTLAX_HOST_LOOP void rms_norm_rows(const float* x, const float* w, float* y, int64_t first,
                                    int64_t end, int64_t width, float eps) {
  constexpr int kLanes = 8;
  for (int64_t r = first; r < end; ++r) {
    const float* row = x + r * width;
    float partial[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= width; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) partial[l] += row[c + l] * row[c + l];
    }
    float sum = 0;
    for (int l = 0; l < kLanes; ++l) sum += partial[l];
    for (; c < width; ++c) sum += row[c] * row[c];
    const float scale = inverse_rms(sum, width, eps);
    for (c = 0; c < width; ++c) y[r * width + c] = row[c] * scale * w[c];
  }
}

cutlax::Error rms_norm_cpu(cutlax::Host host, cutlax::In<float> x, cutlax::In<float> weight,
                           cutlax::Out<float> y, RmsNormParams params) {
  const auto matrix = x.matrix();  // leading axes folded into rows
  const int64_t rows = cute::size<0>(matrix), width = cute::size<1>(matrix);
  if (weight.rank() != 1 || weight.dim(0) != width) {
    return cutlax::Error::InvalidArgument("weight must have shape (" + std::to_string(width) +
                                          ",)");
  }
  // A task is 64 rows; parallel_for returns when every task has run.
  constexpr int64_t kRowsPerTask = 64;
  host.parallel_for(cutlax::ceil_div(rows, kRowsPerTask), [&](int64_t task) {
    rms_norm_rows(x.data(), weight.data(), y.data(), task * kRowsPerTask,
                  std::min(rows, (task + 1) * kRowsPerTask), width, params.eps);
  });
  return cutlax::Error::Success();
}

CUTLAX_OP(kRmsNormTarget, rms_norm_cpu, "rms_norm(x, weight) -> y")
