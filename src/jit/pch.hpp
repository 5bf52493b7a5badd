// The prelude as an NVRTC precompiled header (PCH), one per option set,
// built in a background thread while no compile is running, and used by
// every later compile with the same options (measured on 2 cores: a
// prelude-only kernel compiles in 0.9-1.2 s without it, 0.25-0.45 s with it).
//
// NVRTC runs one compile at a time in a process, so a build competes with the
// user's own compiles; it therefore starts only after compiles have paused
// for kPchIdleSeconds (a script compiling kernels back to back is not held
// up), and a compile that arrives while the build runs waits for it and then
// uses it (it would queue behind it inside NVRTC anyway).
//
// A PCH is valid only in the process that made it and only for exactly the
// same options, so each is a temporary file for this process's life
// ($TMPDIR/cutlax-jit-pch-<uid>/<pid>-<key>.pch, about 140 MB), deleted at
// exit; files left by processes that died are deleted by the next one.
// CUTLAX_JIT_PCH=0 turns the PCH off.
#pragma once

#include <string>
#include <vector>

#include "nvrtc.hpp"

namespace cutlax::jit {

inline constexpr double kPchIdleSeconds = 0.5;

// Whether the PCH is on for this process (CUTLAX_JIT_PCH, read once).
bool pch_enabled();

// Before NVRTC's first compile in the process: the default 256 MiB PCH heap
// is too small for CuTe.
void configure_pch_heap(const Nvrtc& api);

// Brackets one compile with `options` (option set `key`: a hash of the
// options and the include directories' contents). flags() are the options
// that use the PCH (none while there is none); when the compile is over, a
// build is queued for an option set that has no PCH yet.
class PchUse {
 public:
  PchUse(const Nvrtc& api, std::vector<std::string> options, std::string key);
  ~PchUse();
  PchUse(const PchUse&) = delete;
  PchUse& operator=(const PchUse&) = delete;

  const std::vector<std::string>& flags() const { return flags_; }

 private:
  const Nvrtc& api_;
  std::vector<std::string> options_;
  std::string key_;
  std::vector<std::string> flags_;
};

// How many option sets have a ready PCH, for cache_info.
int ready_pch_count();

// Stops the background thread (a build in progress finishes first). Call it
// before the process begins to exit (Python's atexit): NVRTC tears its state
// down in exit handlers that can run before this library's, and a build
// still running then crashes.
void stop_pch_builds();

}  // namespace cutlax::jit
