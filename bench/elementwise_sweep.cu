// Tuning sweep for the elementwise kernel (src/ops/elementwise.cuh): 16-byte
// accesses per thread per operand (B/thread: bytes per operand per thread)
// and threads per block, for vector_add, relu and bias_relu (width 4096), f32,
// bf16 and f16, against a device-to-device cudaMemcpy, on 2^28 elements.
// Times are medians of CUDA-event-timed launches.
//
// Built and run by scripts/gpu_check.sh; by hand:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//     -Iinclude -Isrc/ops -I<cutlass>/include -I<jax.ffi.include_dir()> \
//     bench/elementwise_sweep.cu -o sweep && ./sweep
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bias_relu.hpp"
#include "elementwise.cuh"
#include "relu.hpp"
#include "vector_add.hpp"

// The op headers register their handlers into a table; this binary holds it.
CUTLAX_LIBRARY()

using namespace cutlax;

constexpr int64_t kBiasWidth = 4096;

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

template <class T, int Accesses, int Threads>
void sweep_config(const char* dtype, int64_t n, T* a, T* b, T* out, T* bias) {
  auto vec = [&](T* p) { return make_tensor(cute::make_gmem_ptr(p), vector_layout(n)); };
  auto cvec = [&](T* p) {
    return make_tensor(cute::make_gmem_ptr(static_cast<const T*>(p)), vector_layout(n));
  };
  auto time = [&](auto fn, auto... in) {
    return median_ms([&] {
      if (kernels::launch_map<Accesses, Threads>(nullptr, "sweep", fn, vec(out), in...).failure())
        std::exit(1);
    });
  };
  const double add = time(kernels::Pointwise<ops::Add>{}, cvec(a), cvec(b));
  const double relu = time(kernels::Pointwise<ops::Relu>{}, cvec(a));
  const double bias_relu =
      time(ops::BiasRelu<T, true>{bias, kBiasWidth, cutlass::FastDivmodU64{uint64_t(kBiasWidth)}},
           cvec(a));
  const double gb = double(n) * sizeof(T) / 1e9;
  std::printf("%-9s %6d %8d %7d %10.1f %10.1f %10.1f\n", dtype, Accesses,
              Accesses * kernels::kVectorElements<T> * int(sizeof(T)), Threads,
              3 * gb / (add * 1e-3), 2 * gb / (relu * 1e-3), 2 * gb / (bias_relu * 1e-3));
}

template <class T, int Accesses>
void sweep_threads(const char* dtype, int64_t n, T* a, T* b, T* out, T* bias) {
  sweep_config<T, Accesses, 128>(dtype, n, a, b, out, bias);
  sweep_config<T, Accesses, 256>(dtype, n, a, b, out, bias);
  sweep_config<T, Accesses, 512>(dtype, n, a, b, out, bias);
}

template <class T>
void sweep(const char* dtype, int64_t n) {
  T *a, *b, *out, *bias;
  CHECK(cudaMalloc(&a, n * sizeof(T)));
  CHECK(cudaMalloc(&b, n * sizeof(T)));
  CHECK(cudaMalloc(&out, n * sizeof(T)));
  CHECK(cudaMalloc(&bias, kBiasWidth * sizeof(T)));
  fill_random<<<4096, 256>>>(a, n, 1u);
  fill_random<<<4096, 256>>>(b, n, 2u);
  fill_random<<<16, 256>>>(bias, kBiasWidth, 3u);
  double copy =
      median_ms([&] { CHECK(cudaMemcpyAsync(out, a, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  std::printf("%-9s cudaMemcpy D2D: %.1f GB/s (read + write)\n", dtype,
              2.0 * n * sizeof(T) / 1e9 / (copy * 1e-3));
  std::printf("%-9s %6s %8s %7s %10s %10s %10s\n", "dtype", "access", "B/thread", "threads",
              "add GB/s", "relu GB/s", "b+r GB/s");
  sweep_threads<T, 1>(dtype, n, a, b, out, bias);
  sweep_threads<T, 2>(dtype, n, a, b, out, bias);
  sweep_threads<T, 4>(dtype, n, a, b, out, bias);
  for (T* p : {a, b, out, bias}) CHECK(cudaFree(p));
}

int main() {
  const int64_t n = int64_t(1) << 28;
  sweep<float>("float32", n);
  sweep<cutlass::bfloat16_t>("bfloat16", n);
  sweep<cutlass::half_t>("float16", n);
  return 0;
}
