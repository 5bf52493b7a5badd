// CPU twin of the elementwise kernel (see elementwise.hpp): the same functors
// over runs of the same CuTe views, in loops the compiler vectorises, spread
// over XLA:CPU's thread pool.
#pragma once

#include <algorithm>

#include "elementwise.hpp"

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

// A pool task is 256 runs (256 KiB), long enough that claiming it costs
// nothing measurable and short enough that 2^20 elements already spread over
// several threads.
template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Host exec, const char*, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  using namespace cute;
  constexpr int64_t kTask = 256 * kHostRun<TOut>;
  const int64_t n = size(out);
  const int64_t whole = n / kHostRun<TOut> * kHostRun<TOut>;
  exec.parallel_for((whole + kTask - 1) / kTask, [&](int64_t task) {
    map_runs(fn, task * kTask, std::min(whole, (task + 1) * kTask), out, in...);
  });
  for (int64_t i = whole; i < n; ++i) out(i) = fn.element(i, in(i)...);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels
