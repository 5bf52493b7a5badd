// The compile cache: kernels compiled in this process (in memory) and in
// earlier ones (on disk, under the caller's cache directory), keyed by a
// 128-bit hash of everything that decides the CUBIN: a schema version, the
// cutlax and NVRTC versions, the full option list (architecture and include
// directories among them), the prelude, the source, the entry, and a content
// fingerprint of each include directory.
//
// Disk entries are artifacts (artifact.hpp) named <key>.cutlax-jit, written
// to a temporary file in the same directory, fsync'ed and renamed into
// place, so readers never see a partial file and two processes compiling the
// same kernel both succeed (the last rename wins; both wrote the same
// bytes). An entry that fails its checksum is counted, deleted and rebuilt.
// Threads asking for a kernel already being compiled wait for that compile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler.hpp"

namespace cutlax::jit {

struct CompileResult {
  // Null when the source does not compile; `log` says why.
  std::shared_ptr<const std::vector<uint8_t>> artifact;
  std::string lowered_name;
  std::string log;
};

struct CacheStats {
  int64_t hits = 0;       // answered from memory
  int64_t misses = 0;     // compiles NVRTC ran
  int64_t disk_hits = 0;  // answered from the cache directory
  int64_t corrupt = 0;    // disk entries that failed their checks and were rebuilt
  int64_t disk_write_errors = 0;
  int64_t pch_compiles = 0;       // compiles that used the precompiled prelude
  int64_t nvrtc_crashes = 0;      // compiles that crashed NVRTC (in a child process)
  double last_call_seconds = 0;   // the latest compile() call, hit or miss
  double compile_seconds = 0;     // NVRTC time, all compiles together
  double last_nvrtc_seconds = 0;  // the latest NVRTC compile
  std::string directory;          // the latest cache directory used
};

class CompileCache {
 public:
  explicit CompileCache(std::string cutlax_version);
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // Throws std::runtime_error for infrastructure failures (no NVRTC). An
  // empty `cache_dir` keeps the cache in memory only.
  CompileResult compile(const CompileRequest& request, const std::string& cache_dir);

  CacheStats stats() const;

  // Forgets the in-memory entries; with `disk`, also deletes the entries (and
  // only those: <32 hex digits>.cutlax-jit) in `cache_dir`, or in the latest
  // directory used when it is empty.
  void clear(bool disk, const std::string& cache_dir);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The schema version in every key: bump it when the artifact or the way a
// request becomes a CUBIN changes without the inputs changing.
inline constexpr uint64_t kCacheSchemaVersion = 1;

}  // namespace cutlax::jit
