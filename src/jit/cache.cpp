#include "cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <map>
#include <mutex>

#include "artifact.hpp"
#include "child_compile.hpp"
#include "fingerprint.hpp"
#include "hash.hpp"
#include "pch.hpp"
#include "prelude.hpp"

namespace cutlax::jit {
namespace {

constexpr const char* kEntrySuffix = ".cutlax-jit";
constexpr size_t kKeyDigits = 32;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// mkdir -p.
bool make_directories(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) return true;
  }
}

bool read_file(const std::string& path, std::vector<uint8_t>& bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info;
  bool ok = fstat(fd, &info) == 0;
  if (ok) {
    bytes.resize(static_cast<size_t>(info.st_size));
    size_t done = 0;
    while (ok && done < bytes.size()) {
      ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
  }
  close(fd);
  return ok;
}

// Writes `bytes` to `path` atomically: a unique temporary file beside it,
// fsync, rename.
bool write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  static std::atomic<uint64_t> counter{0};
  const std::string temp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  ok = ok && rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(temp.c_str());
  return ok;
}

bool is_entry_name(const std::string& name) {
  const size_t suffix = std::char_traits<char>::length(kEntrySuffix);
  if (name.size() != kKeyDigits + suffix || name.compare(kKeyDigits, suffix, kEntrySuffix) != 0) {
    return false;
  }
  for (size_t i = 0; i < kKeyDigits; ++i) {
    const char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

struct CompileCache::State {
  std::string cutlax_version;
  mutable std::mutex mutex;
  std::map<std::string, CompileResult> memory;
  // Compiles in flight, so a second thread asking for one waits for it.
  std::map<std::string, std::shared_future<CompileResult>> in_flight;
  CacheStats stats;
  std::once_flag pch_heap_once;
};

CompileCache::CompileCache(std::string cutlax_version) : state_(std::make_unique<State>()) {
  state_->cutlax_version = std::move(cutlax_version);
}

CompileCache::~CompileCache() = default;

CompileResult CompileCache::compile(const CompileRequest& request, const std::string& cache_dir) {
  const Clock::time_point start = Clock::now();
  State& s = *state_;
  // The first call loads NVRTC (~9 ms) while it walks the include
  // directories (~10 ms): a disk hit in a fresh process waits for one, not both.
  std::future<const Nvrtc*> loading;
  if (!nvrtc_loaded()) loading = std::async(std::launch::async, [] { return &nvrtc(); });
  const uint64_t includes = include_dirs_fingerprint(request.include_dirs);
  const Nvrtc& api = loading.valid() ? *loading.get() : nvrtc();
  const std::vector<std::string> options = nvrtc_options(request);

  // Everything that decides the CUBIN. The PCH key leaves out the source
  // and entry: one PCH serves every kernel compiled with these options.
  KeyBuilder key_builder;
  key_builder.add("cutlax.jit").add(kCacheSchemaVersion).add(s.cutlax_version);
  key_builder.add(api.version_text).add(prelude_source());
  key_builder.add(options.size());
  for (const std::string& option : options) key_builder.add(option);
  key_builder.add(includes);
  const std::string pch_key = key_builder.hex();
  const std::string key = key_builder.add(request.source).add(request.entry).hex();

  std::promise<CompileResult> promise;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (!cache_dir.empty()) s.stats.directory = cache_dir;
    auto hit = s.memory.find(key);
    if (hit != s.memory.end()) {
      ++s.stats.hits;
      s.stats.last_call_seconds = seconds_since(start);
      return hit->second;
    }
    auto pending = s.in_flight.find(key);
    if (pending != s.in_flight.end()) {
      std::shared_future<CompileResult> future = pending->second;
      lock.unlock();
      CompileResult result = future.get();  // rethrows the compiling thread's exception
      lock.lock();
      ++s.stats.hits;
      s.stats.last_call_seconds = seconds_since(start);
      return result;
    }
    s.in_flight.emplace(key, promise.get_future().share());
  }

  auto finish = [&](CompileResult result) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (result.artifact) s.memory.emplace(key, result);
    s.in_flight.erase(key);
    s.stats.last_call_seconds = seconds_since(start);
    promise.set_value(result);
    return result;
  };

  try {
    const std::string path = cache_dir.empty() ? "" : cache_dir + "/" + key + kEntrySuffix;
    std::vector<uint8_t> bytes;
    if (!path.empty() && read_file(path, bytes)) {
      ArtifactView view;
      if (parse_artifact(bytes.data(), bytes.size(), view).empty()) {
        CompileResult result;
        result.lowered_name = std::string(view.lowered_name);
        result.artifact = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
        {
          std::lock_guard<std::mutex> lock(s.mutex);
          ++s.stats.disk_hits;
        }
        return finish(std::move(result));
      }
      unlink(path.c_str());
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.stats.corrupt;
    }

    std::call_once(s.pch_heap_once, [&] { configure_pch_heap(api); });
    CompileOutput out;
    bool used_pch = false;
    double nvrtc_seconds = 0;
    {
      const PchUse pch(api, options, pch_key);
      std::vector<std::string> flags = options;
      flags.insert(flags.end(), pch.flags().begin(), pch.flags().end());
      used_pch = !pch.flags().empty();
      const Clock::time_point nvrtc_start = Clock::now();
      out = compile_isolated(api, program_text(request.source), request.entry, flags);
      nvrtc_seconds = seconds_since(nvrtc_start);
    }

    CompileResult result;
    result.log = std::move(out.log);
    result.lowered_name = std::move(out.lowered_name);
    bool write_failed = false;
    if (out.ok) {
      auto artifact = std::make_shared<const std::vector<uint8_t>>(
          encode_artifact(request.arch, result.lowered_name, out.cubin));
      write_failed =
          !path.empty() && !(make_directories(cache_dir) && write_file_atomically(path, *artifact));
      result.artifact = std::move(artifact);
    }
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.stats.misses;
      s.stats.nvrtc_crashes += out.crashed;
      s.stats.pch_compiles += used_pch;
      s.stats.disk_write_errors += write_failed;
      s.stats.compile_seconds += nvrtc_seconds;
      s.stats.last_nvrtc_seconds = nvrtc_seconds;
    }
    return finish(std::move(result));
  } catch (...) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.in_flight.erase(key);
    promise.set_exception(std::current_exception());
    throw;
  }
}

CacheStats CompileCache::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

void CompileCache::clear(bool disk, const std::string& cache_dir) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->memory.clear();
    dir = cache_dir.empty() ? state_->stats.directory : cache_dir;
  }
  if (!disk || dir.empty()) return;
  DIR* listing = opendir(dir.c_str());
  if (!listing) return;
  while (dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (is_entry_name(name)) unlinkat(dirfd(listing), name.c_str(), 0);
  }
  closedir(listing);
}

}  // namespace cutlax::jit
