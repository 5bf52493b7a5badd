// Single-threaded throughput of the CPU twins, outside JAX: the elementwise
// kernel per dtype through the op's handler (which takes the F16C path for
// float16 where the CPU has it) and through the portable path (the op's
// functor on the arrays' own element type, convert.hpp's conversions), and
// the GEMM twin. No thread pool, no XLA, results written into buffers that
// are already mapped: the figures are the loops' own.
//
//   cmake --build build/tests --target cutlax_host_bench && build/tests/bench/cutlax_host_bench
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "../tests/cpp/fake_buffer.hpp"
#include "elementwise_cpu.hpp"
#include "gemm_tiled.hpp"
#include "vector_add.hpp"

// The op headers register their handlers into a table; this binary holds it.
CUTLAX_LIBRARY()

namespace cutlax {
namespace {

using testing::FakeBuffer;

// Best seconds per call over 7 samples, each a batch of calls lasting >= 20 ms.
template <class F>
double best_seconds(F&& call) {
  using clock = std::chrono::steady_clock;
  auto seconds = [&](int calls) {
    const auto start = clock::now();
    for (int i = 0; i < calls; ++i) call();
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  call();
  const int calls = std::max(1, int(0.02 / std::max(seconds(1), 1e-7)));
  double best = 1e30;
  for (int sample = 0; sample < 7; ++sample) best = std::min(best, seconds(calls) / calls);
  return best;
}

template <class T>
void vector_add_rates(const char* name, ffi::DataType dtype, int64_t n) {
  FakeBuffer a(dtype, {n}), b(dtype, {n}), out(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    a.data<T>()[i] = from_float<T>(float(i % 97) * 0.25f - 12.0f);
    b.data<T>()[i] = from_float<T>(float(i % 13) * 0.5f);
  }
  auto result = out.result();
  const double bytes = 3.0 * n * sizeof(T);
  const double op = best_seconds([&] { (void)ops::vector_add(Host{}, a.any(), b.any(), result); });
  const double portable = best_seconds([&] {
    (void)kernels::map_runs_in_tasks(Host{}, kernels::Pointwise<ops::Add>{}, flat_view<T>(result),
                                     flat_view<T>(a.any()), flat_view<T>(b.any()));
  });
  std::printf("vector_add %-8s 2^%-2d  handler %6.1f GB/s   portable path %6.1f GB/s\n", name,
              __builtin_ctzll(uint64_t(n)), bytes / op / 1e9, bytes / portable / 1e9);
}

void gemm_rate(int64_t size) {
  FakeBuffer a(ffi::DataType::F32, {size, size}), b(ffi::DataType::F32, {size, size}),
      c(ffi::DataType::F32, {size, size});
  for (int64_t i = 0; i < size * size; ++i) {
    a.data<float>()[i] = float(i % 7) - 3.0f;
    b.data<float>()[i] = float(i % 5) - 2.0f;
  }
  auto result = c.result();
  const double seconds =
      best_seconds([&] { (void)ops::gemm_tiled(Host{}, a.any(), b.any(), result); });
  std::printf("gemm_tiled float32 %lld^3  %6.1f GFLOP/s\n", static_cast<long long>(size),
              2.0 * size * size * size / seconds / 1e9);
}

}  // namespace
}  // namespace cutlax

int main() {
  using namespace cutlax;
  for (int64_t n : {int64_t(1) << 16, int64_t(1) << 22}) {
    vector_add_rates<float>("float32", ffi::DataType::F32, n);
    vector_add_rates<cutlass::bfloat16_t>("bfloat16", ffi::DataType::BF16, n);
    vector_add_rates<cutlass::half_t>("float16", ffi::DataType::F16, n);
  }
  for (int64_t size : {512, 1024, 2048}) gemm_rate(size);
}
