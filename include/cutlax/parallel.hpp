// parallel_for: splits a CPU twin's work across XLA:CPU's intra-op thread pool
// (ffi::ThreadPool, reached through cutlax::Host::parallel_for).
//
// The calling thread works too and only returns once every task has run, so
// the body may capture the handler's locals by reference. Tasks are claimed
// from a shared counter: a pool thread that starts late, when the work is
// already done, finds nothing to claim and never touches the body; a caller
// that is itself a pool thread, with no other thread free, runs every task
// itself instead of waiting for help that cannot come.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

// CUTLAX_HOST_LOOP before a host function compiles it twice on x86-64, for
// the baseline ISA and for x86-64-v3 (AVX2, FMA, F16C: Haswell and later),
// and the dynamic loader picks the one the running CPU supports (function
// multi-versioning, GCC and Clang). A CPU twin's hot loop goes in such a
// function: the baseline's 128-bit integer vectors make 16-bit conversions
// several times slower than AVX2's. Not under a sanitizer: the loader runs
// the version-picking resolver before the sanitizer's runtime is up, and an
// instrumented resolver crashes there.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define CUTLAX_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CUTLAX_SANITIZED 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CUTLAX_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CUTLAX_TSAN 1
#endif
#if defined(CUTLAX_TSAN)
#include <sanitizer/tsan_interface.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(CUTLAX_SANITIZED)
#define CUTLAX_HOST_LOOP __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define CUTLAX_HOST_LOOP
#endif

namespace cutlax {

// How many pieces of b cover a (a >= 0, b > 0): pool tasks, grid blocks.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

namespace detail {

#if defined(CUTLAX_TSAN)
// Under ThreadSanitizer: XLA:CPU's thread pool lives in uninstrumented jaxlib,
// so TSan cannot see that handing a task to it orders the task's creation
// before its run, and reports the task's own captures as racing. Each copy
// of the task releases on its own address once constructed (having acquired
// its source's), and the run acquires that address before touching a
// capture: the edge from the scheduling thread to the task, per task, and
// nothing more, so races between tasks, or with the caller, are still seen.
template <class Fn>
struct PoolTask {
  Fn fn;
  explicit PoolTask(Fn f) : fn(std::move(f)) { __tsan_release(this); }
  PoolTask(const PoolTask& other) : fn((__tsan_acquire(const_cast<PoolTask*>(&other)), other.fn)) {
    __tsan_release(this);
  }
  PoolTask(PoolTask&& other) : fn((__tsan_acquire(&other), std::move(other.fn))) {
    __tsan_release(this);
  }
  void operator()() {
    __tsan_acquire(this);
    fn();
  }
};
template <class Fn>
PoolTask<Fn> pool_task(Fn fn) {
  return PoolTask<Fn>(std::move(fn));
}
#else
template <class Fn>
Fn pool_task(Fn fn) {
  return fn;
}
#endif

}  // namespace detail

// Runs body(task) for task in [0, tasks). Pool: Schedule(F) and
// num_threads(), as ffi::ThreadPool has; nullptr runs everything inline.
template <class Pool, class Body>
void parallel_for(Pool* pool, int64_t tasks, const Body& body) {
  const int64_t helpers = pool ? std::min<int64_t>(pool->num_threads(), tasks - 1) : 0;
  if (helpers <= 0) {
    for (int64_t task = 0; task < tasks; ++task) body(task);
    return;
  }
  struct State {
    std::atomic<int64_t> next{0}, done{0};
    std::mutex mutex;
    std::condition_variable finished;
  };
  auto state = std::make_shared<State>();
  // The worker owns a reference to the state, never to anything the caller
  // frees, until it has claimed a task (and the caller is then still waiting).
  auto work = [state, tasks, body = &body] {
    int64_t task;
    while ((task = state->next.fetch_add(1)) < tasks) {
      (*body)(task);
      if (state->done.fetch_add(1) + 1 == tasks) {
        // Taking the lock orders this notify after the caller's predicate
        // check, so the wake-up cannot be lost.
        { std::lock_guard<std::mutex> lock(state->mutex); }
        state->finished.notify_all();
      }
    }
  };
  for (int64_t i = 0; i < helpers; ++i) pool->Schedule(detail::pool_task(work));  // a copy each
  work();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->finished.wait(lock, [&] { return state->done.load() == tasks; });
}

}  // namespace cutlax
