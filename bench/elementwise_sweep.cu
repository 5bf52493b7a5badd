// Tuning sweep for the elementwise kernel shapes (src/ops/elementwise.cuh):
// bytes per thread and threads per block, for map_3d (vector_add) and
// map_flat (relu), f32 and bf16, against a device-to-device cudaMemcpy, on
// 2^28 elements. Times are medians of CUDA-event-timed launches.
//
// Built and run by scripts/gpu_check.sh; by hand:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//     -Iinclude -Isrc/ops -I<cutlass>/include -I<jax.ffi.include_dir()> \
//     bench/elementwise_sweep.cu -o sweep && ./sweep
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "elementwise.cuh"
#include "relu.hpp"
#include "vector_add.hpp"

using namespace cutlax;

#define CHECK(call)                                                   \
  do {                                                                \
    cudaError_t e = (call);                                           \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

template <class T>
__global__ void fill_random(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    p[i] = T(float(h >> 8) / float(1 << 23) - 1.0f);
  }
}

template <class Launch>
double median_ms(Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> times;
  for (int i = 0; i < 20; ++i) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <class T, int Bytes, int Threads>
void sweep_config(const char* dtype, int64_t n, T* a, T* b, T* out) {
  constexpr int ept = Bytes / sizeof(T);
  const int64_t blocks = (n + ept * Threads - 1) / (ept * Threads);
  auto vec = [&](T* p) { return make_tensor(cute::make_gmem_ptr(p), vector_layout(n)); };
  auto cvec = [&](T* p) {
    return make_tensor(cute::make_gmem_ptr(static_cast<const T*>(p)), vector_layout(n));
  };
  double add = median_ms([&] {
    kernels::map_3d_kernel<ept, Threads, 128>
        <<<blocks, Threads>>>(ops::Add<T>{}, vec(out), cvec(a), cvec(b));
  });
  double relu = median_ms([&] {
    kernels::map_flat_kernel<ept, Threads, 128>
        <<<blocks, Threads>>>(ops::Relu{}, vec(out), cvec(a));
  });
  const double gb = double(n) * sizeof(T) / 1e9;
  std::printf("%-9s %5d %7d %10.1f %10.1f\n", dtype, Bytes, Threads, 3 * gb / (add * 1e-3),
              2 * gb / (relu * 1e-3));
}

template <class T, int Bytes>
void sweep_threads(const char* dtype, int64_t n, T* a, T* b, T* out) {
  sweep_config<T, Bytes, 128>(dtype, n, a, b, out);
  sweep_config<T, Bytes, 256>(dtype, n, a, b, out);
  sweep_config<T, Bytes, 512>(dtype, n, a, b, out);
}

template <class T>
void sweep(const char* dtype, int64_t n) {
  T *a, *b, *out;
  CHECK(cudaMalloc(&a, n * sizeof(T)));
  CHECK(cudaMalloc(&b, n * sizeof(T)));
  CHECK(cudaMalloc(&out, n * sizeof(T)));
  fill_random<<<4096, 256>>>(a, n, 1u);
  fill_random<<<4096, 256>>>(b, n, 2u);
  double copy =
      median_ms([&] { CHECK(cudaMemcpyAsync(out, a, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  std::printf("%-9s cudaMemcpy D2D: %.1f GB/s (read + write)\n", dtype,
              2.0 * n * sizeof(T) / 1e9 / (copy * 1e-3));
  std::printf("%-9s %5s %7s %10s %10s\n", "dtype", "bytes", "threads", "add GB/s", "relu GB/s");
  sweep_threads<T, 16>(dtype, n, a, b, out);
  sweep_threads<T, 32>(dtype, n, a, b, out);
  sweep_threads<T, 64>(dtype, n, a, b, out);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(out));
}

int main() {
  const int64_t n = int64_t(1) << 28;
  sweep<float>("float32", n);
  sweep<cutlass::bfloat16_t>("bfloat16", n);
  return 0;
}
