// The CPU twin: the same op on the host, one row at a time.
#include <cmath>

#include "rms_norm.hpp"

cutlax::Error rms_norm_cpu(cutlax::Host, cutlax::In<float> x, cutlax::In<float> weight,
                        cutlax::Out<float> y, RmsNormParams params) {
  auto rows = x.matrix();
  auto w = weight.flat();
  auto out = y.matrix();
  const int64_t width = cute::size<1>(rows);
  if (weight.rank() != 1 || weight.dim(0) != width) {
    return cutlax::Error::InvalidArgument("weight must have shape (" + std::to_string(width) + ",)");
  }
  for (int64_t r = 0; r < cute::size<0>(rows); ++r) {
    float sum = 0;
    for (int64_t c = 0; c < width; ++c) sum += rows(r, c) * rows(r, c);
    const float scale = inverse_rms(sum, width, params.eps);
    for (int64_t c = 0; c < width; ++c) out(r, c) = rows(r, c) * scale * w(c);
  }
  return cutlax::Error::Success();
}

CUTLAX_OP(kRmsNormTarget, rms_norm_cpu, "rms_norm(x, weight) -> y")
