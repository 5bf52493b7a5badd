// CPU twin of the elementwise kernel (see elementwise.hpp): the same functors
// over runs of the same CuTe views, in loops the compiler vectorises, spread
// over XLA:CPU's thread pool.
#pragma once

#include <algorithm>

#include "elementwise.hpp"

namespace cutlax::kernels {

// Host runs are longer than a GPU thread's: 1 KiB of output amortises per-run
// work (bias_relu's column division) and stays in L1. A pool task is 256 runs
// (256 KiB), long enough that claiming it costs nothing measurable and short
// enough that 2^20 elements already spread over several threads.
template <class Fn, class TOut, class... TIn>
ffi::Error map_indexed(Host exec, const char*, Fn fn, Vector<TOut> out, Vector<const TIn>... in) {
  using namespace cute;
  constexpr int64_t kRun = 1024 / sizeof(TOut);
  constexpr int64_t kRunsPerTask = 256;
  const int64_t n = size(out);
  const int64_t runs = n / kRun;
  auto run_at = [](auto flat, int64_t first) {
    return make_tensor(flat.data() + first, Int<kRun>{});
  };
  exec.parallel_for((runs + kRunsPerTask - 1) / kRunsPerTask, [&](int64_t task) {
    const int64_t end = std::min(runs, (task + 1) * kRunsPerTask);
    for (int64_t first = task * kRunsPerTask * kRun; first < end * kRun; first += kRun) {
      auto dst = run_at(out, first);
      fn.run(dst, first, run_at(in, first)...);
    }
  });
  for (int64_t i = runs * kRun; i < n; ++i) out(i) = fn.element(i, in(i)...);
  return ffi::Error::Success();
}

}  // namespace cutlax::kernels
