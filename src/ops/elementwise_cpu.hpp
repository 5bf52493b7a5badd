// CPU twin of the elementwise kernel (see elementwise.hpp): the same functors
// over runs of the same CuTe views, in loops the compiler vectorises, spread
// over XLA:CPU's thread pool.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

#include "elementwise.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define CUTLAX_HAVE_F16C_PATH 1
#endif

namespace cutlax::kernels {

// Host runs are longer than a GPU thread's: 1 KiB of output amortises per-run
// work (bias_relu's column division) and stays in L1.
template <class TOut>
inline constexpr int64_t kHostRun = 1024 / sizeof(TOut);

// fn over the whole runs of elements [first, end).
template <class Fn, class TOut, class... TIn>
CUTLAX_HOST_LOOP void map_runs(const Fn& fn, int64_t first, int64_t end, Vector<TOut> out,
                               Vector<const TIn>... in) {
  using namespace cute;
  constexpr int64_t run = kHostRun<TOut>;
  auto run_at = [](auto flat, int64_t at) { return make_tensor(flat.data() + at, Int<run>{}); };
  for (int64_t at = first; at < end; at += run) {
    auto dst = run_at(out, at);
    fn.run(dst, at, run_at(in, at)...);
  }
}

#if defined(CUTLAX_HAVE_F16C_PATH)
// F16C's instructions convert 8 halves to or from 8 floats at once, where the
// portable conversion (convert.hpp) takes a dozen integer operations per
// vector and leaves a half twin compute bound (bench/host_kernels.cpp
// measures both paths; figures in bench/RESULTS.md).
// HalfRunsThroughF16c, below, widens each operand's run to floats with them,
// has the op's run functor fill a float run, and narrows it (round to
// nearest even, as from_float does): the same values, since the op computes
// in float and rounds once. It is compiled for F16C (and AVX2 and FMA, as
// CUTLAX_HOST_LOOP's x86-64-v3 clone is) whatever the build's ISA, and used
// only where the CPU has them; GCC does not vectorise _Float16 conversions
// without AVX-512 FP16, hence the intrinsics. (bfloat16 has no such path:
// explicit AVX2 code for it ran slower than GCC's vectorisation of the
// portable conversion.)
#define CUTLAX_F16C_TARGET __attribute__((target("avx2,fma,f16c")))

inline bool cpu_has_f16c() {
  static const bool has = [] {
    // F16C is CPUID leaf 1, ECX bit 29, asked directly: clang 14's
    // __builtin_cpu_supports does not know "f16c".
    unsigned eax, ebx, ecx, edx;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
    return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

// count halves (a multiple of 8) to floats, and floats back to halves,
// rounded to nearest even.
CUTLAX_F16C_TARGET inline void widen_halves(const cutlass::half_t* from, float* to, int64_t count) {
  for (int64_t i = 0; i < count; i += 8) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
    _mm256_storeu_ps(to + i, _mm256_cvtph_ps(bits));
  }
}
CUTLAX_F16C_TARGET inline void narrow_to_halves(const float* from, cutlass::half_t* to,
                                                int64_t count) {
  for (int64_t i = 0; i < count; i += 8) {
    const __m128i bits = _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i), bits);
  }
}

template <class Fn>
struct HalfRunsThroughF16c {
  Fn fn;

  template <class Out, class... In>
  CUTLAX_F16C_TARGET void run(Out& out, int64_t first, In const&... in) const {
    run_widened(out, first, std::index_sequence_for<In...>{}, in...);
  }
  template <class... T>
  cutlass::half_t element(int64_t index, T... x) const {
    return fn.element(index, x...);
  }

 private:
  template <class Out, size_t... Operand, class... In>
  CUTLAX_F16C_TARGET void run_widened(Out& out, int64_t first, std::index_sequence<Operand...>,
                                      In const&... in) const {
    using namespace cute;
    constexpr int n = decltype(size(out))::value;
    static_assert(n % 8 == 0);
    float widened[sizeof...(In)][n];
    (widen_halves(&in(0), widened[Operand], n), ...);
    float results[n];
    auto results_run = make_tensor(&results[0], Int<n>{});
    fn.run(results_run, first, make_tensor(&std::as_const(widened[Operand][0]), Int<n>{})...);
    narrow_to_halves(results, &out(0), n);
  }
};
#endif

// A pool task is 256 runs (256 KiB), long enough that claiming it costs
// nothing measurable and short enough that 2^20 elements already spread over
// several threads.
template <class Fn, class TOut, class... TIn>
ffi::Error map_runs_in_tasks(Host exec, const Fn& fn, Vector<TOut> out, Vector<const TIn>... in) {
  using namespace cute;
  constexpr int64_t kTask = 256 * kHostRun<TOut>;
  const int64_t n = size(out);
  const int64_t whole = n / kHostRun<TOut> * kHostRun<TOut>;
  exec.parallel_for(ceil_div(whole, kTask), [&](int64_t task) {
    map_runs(fn, task * kTask, std::min(whole, (task + 1) * kTask), out, in...);
  });
  for (int64_t i = whole; i < n; ++i) out(i) = fn.element(i, in(i)...);
  return ffi::Error::Success();
}

template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Host exec, const char*, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
#if defined(CUTLAX_HAVE_F16C_PATH)
  using half = cutlass::half_t;
  if constexpr (std::is_same_v<TOut, half> && (std::is_same_v<TIn, half> && ...)) {
    if (cpu_has_f16c()) return map_runs_in_tasks(exec, HalfRunsThroughF16c<Fn>{fn}, out, in...);
  }
#endif
  return map_runs_in_tasks(exec, fn, out, in...);
}

}  // namespace cutlax::kernels
