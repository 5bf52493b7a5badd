// The CUDA kernel: one thread block per row. Threads stride across the row
// (coalesced), sum squares, combine the sums with warp shuffles and shared
// memory, then scale the row they just read (now in L1) and write it.
#include <cutlax/cuda.hpp>

#include "rms_norm.hpp"

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(cutlax::Matrix<const float> x, cutlax::Vector<const float> w,
                    cutlax::Matrix<float> y, float eps) {
  const int64_t row = blockIdx.x, width = cute::size<1>(x);
  auto x_row = x(row, cute::_);  // this block's row: a 1-D view
  auto y_row = y(row, cute::_);
  float sum = 0;
  for (int64_t c = threadIdx.x; c < width; c += kThreads) sum += x_row(c) * x_row(c);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffff, sum, offset);
  __shared__ float warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0;
  for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  const float scale = inverse_rms(total, width, eps);
  for (int64_t c = threadIdx.x; c < width; c += kThreads) y_row(c) = x_row(c) * scale * w(c);
}

cutlax::Error rms_norm_cuda(cudaStream_t stream, cutlax::In<float> x, cutlax::In<float> weight,
                            cutlax::Out<float> y, RmsNormParams params) {
  const int64_t rows = x.size() / x.dim(-1);
  if (weight.rank() != 1 || weight.dim(0) != x.dim(-1)) {
    return cutlax::Error::InvalidArgument("weight must have shape (" + std::to_string(x.dim(-1)) +
                                          ",)");
  }
  if (rows == 0) return cutlax::Error::Success();
  CUTLAX_RETURN_IF_ERROR(cutlax::expect_grid_fits(rows, "x's rows"));
  rms_norm_kernel<<<unsigned(rows), kThreads, 0, stream>>>(x.matrix(), weight.flat(), y.matrix(),
                                                           params.eps);
  return cutlax::launch_status("rms_norm");
}

CUTLAX_OP(kRmsNormTarget, rms_norm_cuda, "rms_norm(x, weight) -> y")
