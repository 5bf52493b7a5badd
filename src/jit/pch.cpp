#include "pch.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "child_compile.hpp"
#include "compiler.hpp"
#include "prelude.hpp"

namespace cutlax::jit {
namespace {

constexpr size_t kPchHeapBytes = size_t{1} << 30;
constexpr NvrtcResult kPchCreateSuccess = 0;
constexpr const char* kPchSuffix = ".pch";

using Clock = std::chrono::steady_clock;

enum class PchState { kQueued, kBuilding, kReady, kFailed };

struct Pch {
  std::vector<std::string> options;
  std::string path;
  PchState state = PchState::kQueued;
};

std::string pch_directory() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/cutlax-jit-pch-" + std::to_string(getuid());
}

// Deletes PCH files whose process has exited (a crash skips the cleanup at exit).
void remove_orphans(const std::string& dir) {
  DIR* listing = opendir(dir.c_str());
  if (!listing) return;
  while (dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    const size_t dash = name.find('-');
    if (dash == std::string::npos || name.size() < 4 ||
        name.compare(name.size() - 4, 4, kPchSuffix) != 0) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::atol(name.substr(0, dash).c_str()));
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) unlink((dir + "/" + name).c_str());
  }
  closedir(listing);
}

// The PCHs of this process and the one thread that builds them.
class PchBuilder {
 public:
  ~PchBuilder() {
    if (forked()) {
      // The thread ran in the parent; its copy here is inert.
      if (worker_.joinable()) worker_.detach();
      return;
    }
    stop();
    for (const auto& [key, pch] : pchs_) unlink(pch.path.c_str());
  }

  std::vector<std::string> begin_compile(const std::string& key) {
    if (forked()) return {};
    std::unique_lock<std::mutex> lock(mutex_);
    ++compiling_;
    auto found = pchs_.find(key);
    if (found == pchs_.end()) return {};
    Pch& pch = found->second;
    changed_.wait(lock, [&] { return pch.state != PchState::kBuilding; });
    if (pch.state != PchState::kReady) return {};
    return {"--use-pch=" + pch.path, "--pch-messages=false"};
  }

  void end_compile(const Nvrtc& api, const std::vector<std::string>& options,
                   const std::string& key) {
    if (forked()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    --compiling_;
    last_compile_end_ = Clock::now();
    if (!stopping_ && pchs_.find(key) == pchs_.end()) {
      const std::string dir = pch_directory();
      if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) {
        if (pchs_.empty()) remove_orphans(dir);
        Pch& pch = pchs_[key];
        pch.options = options;
        pch.path = dir + "/" + std::to_string(owner_) + "-" + key + kPchSuffix;
        if (!worker_.joinable()) worker_ = std::thread([this, &api] { work(api); });
      }
    }
    changed_.notify_all();
  }

  int ready() {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (const auto& [key, pch] : pchs_) n += pch.state == PchState::kReady;
    return n;
  }

  void stop() {
    if (forked()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  // A child of fork() has neither the thread nor a use for the parent's PCHs
  // (valid only in the process that made them), and a lock a parent thread
  // held at the fork stays held: it compiles without the PCH, touching none
  // of this.
  bool forked() const { return getpid() != owner_; }

  Pch* next_queued() {
    for (auto& [key, pch] : pchs_) {
      if (pch.state == PchState::kQueued) return &pch;
    }
    return nullptr;
  }

  // Builds queued PCHs one at a time, each once compiles have paused.
  void work(const Nvrtc& api) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      Pch* pch = next_queued();
      if (!pch) {
        changed_.wait(lock);
        continue;
      }
      const auto idle_since =
          last_compile_end_ + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(kPchIdleSeconds));
      if (compiling_ > 0) {
        changed_.wait(lock);
        continue;
      }
      if (Clock::now() < idle_since) {
        changed_.wait_until(lock, idle_since);
        continue;
      }
      pch->state = PchState::kBuilding;
      std::vector<std::string> options = pch->options;
      options.push_back("--create-pch=" + pch->path);
      options.push_back("--pch-messages=false");
      lock.unlock();
      bool created = false;
      try {
        // In this process (a PCH is valid only where it was made), so under
        // the lock that keeps fork() out (child_compile.hpp).
        std::lock_guard<std::mutex> in_process(nvrtc_process_mutex());
        CompileOutput out = run_nvrtc(api, std::string("#include <") + kPreludeName + ">\n",
                                      /*entry=*/"", options);
        created = out.ok && out.pch_create_status == kPchCreateSuccess;
      } catch (const std::exception&) {
        // NVRTC failed outright: compiles go on without the PCH.
      }
      lock.lock();
      pch->state = created ? PchState::kReady : PchState::kFailed;
      changed_.notify_all();
    }
  }

  const pid_t owner_ = getpid();
  std::mutex mutex_;
  std::condition_variable changed_;
  // std::map: the worker's Pch* stays valid while others are added.
  std::map<std::string, Pch> pchs_;
  int compiling_ = 0;
  Clock::time_point last_compile_end_;
  bool stopping_ = false;
  std::thread worker_;
};

PchBuilder& builder() {
  static PchBuilder instance;
  return instance;
}

}  // namespace

bool pch_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("CUTLAX_JIT_PCH");
    return !(value && std::string(value) == "0");
  }();
  return enabled;
}

void configure_pch_heap(const Nvrtc& api) {
  if (pch_enabled() && api.set_pch_heap_size) api.set_pch_heap_size(kPchHeapBytes);
}

PchUse::PchUse(const Nvrtc& api, std::vector<std::string> options, std::string key)
    : api_(api), options_(std::move(options)), key_(std::move(key)) {
  if (pch_enabled() && api_.get_pch_create_status) flags_ = builder().begin_compile(key_);
}

PchUse::~PchUse() {
  if (pch_enabled() && api_.get_pch_create_status) builder().end_compile(api_, options_, key_);
}

int ready_pch_count() { return pch_enabled() ? builder().ready() : 0; }

void stop_pch_builds() {
  if (pch_enabled()) builder().stop();
}

}  // namespace cutlax::jit
