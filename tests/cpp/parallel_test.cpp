// parallel_for against pools that run tasks at once on threads, and that run
// them only after the caller has returned (a pool with every thread busy).
#include <gtest/gtest.h>

#include <atomic>
#include <cutlax/parallel.hpp>
#include <functional>
#include <thread>
#include <vector>

namespace cutlax {
namespace {

// Each scheduled task gets its own thread.
struct ThreadedPool {
  int threads;
  std::vector<std::thread> running;
  template <class F>
  void Schedule(F&& f) {
    running.emplace_back(std::forward<F>(f));
  }
  int num_threads() const { return threads; }
  ~ThreadedPool() {
    for (auto& t : running) t.join();
  }
};

// Keeps scheduled tasks until run_deferred(): none runs while parallel_for is
// in progress.
struct DeferredPool {
  std::vector<std::function<void()>> queued;
  template <class F>
  void Schedule(F&& f) {
    queued.emplace_back(std::forward<F>(f));
  }
  int num_threads() const { return 4; }
  void run_deferred() {
    for (auto& task : queued) task();
  }
};

// How often each task ran, given a function that runs parallel_for with a body.
template <class Run>
std::vector<int> run_counts(int64_t tasks, Run run) {
  std::vector<std::atomic<int>> counts(tasks);
  run([&](int64_t task) { counts[task].fetch_add(1); });
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

TEST(ParallelFor, RunsEveryTaskOnceOnThreads) {
  for (int64_t tasks : {0, 1, 2, 7, 1000}) {
    ThreadedPool pool{3, {}};
    auto counts = run_counts(tasks, [&](auto body) { parallel_for(&pool, tasks, body); });
    EXPECT_EQ(counts, std::vector<int>(tasks, 1)) << tasks << " tasks";
  }
}

TEST(ParallelFor, WithoutAPoolRunsInline) {
  auto counts =
      run_counts(5, [&](auto body) { parallel_for(static_cast<ThreadedPool*>(nullptr), 5, body); });
  EXPECT_EQ(counts, std::vector<int>(5, 1));
}

TEST(ParallelFor, FinishesAloneWhenThePoolNeverHelps) {
  DeferredPool pool;
  int calls = 0;
  parallel_for(&pool, 9, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 9);
  ASSERT_EQ(pool.queued.size(), 4u);
  pool.run_deferred();  // late helpers find nothing left to claim
  EXPECT_EQ(calls, 9);
}

}  // namespace
}  // namespace cutlax
