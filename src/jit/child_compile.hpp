// NVRTC in a child process, so that NVRTC crashing (NVRTC 13.0 segfaults in
// nvrtcCompileProgram when an entry name expression is registered and a
// kernel parameter's type is undeclared) is a compile error with a log, not
// the death of the user's Python process.
//
// A compile that misses both caches fork()s; the child runs run_nvrtc, writes
// the CompileOutput over a pipe and _exit()s; the parent (the calling thread,
// GIL released by the bindings) reads it and reaps the child. A child that
// dies of a signal becomes a failed compile whose log says NVRTC crashed and
// gives what a second child, compiling without the entry's name expression
// (no crash then), reports: the undeclared type's name and line.
//
// Why forking a process that has JAX's (and XLA's) threads is safe enough:
// only the forking thread exists in the child, and it runs NVRTC, this
// file's encoding and write(2), then _exit(2): no Python (the GIL is
// released and the child never takes it), no JAX or XLA, no exit handlers,
// no static destructors. The locks that code needs: glibc's malloc (fork()
// resets it in the child, as it must for every fork of a threaded program)
// and NVRTC's own state, which no other thread can be using at the fork:
// every in-process NVRTC compile (the precompiled-header build, compiles with
// the child disabled) holds nvrtc_process_mutex(), and so does fork(). NVRTC
// starts no threads in the child (checked with strace, NVRTC 13.0). The
// child also resets SIGINT and SIGTERM (Python's handlers would swallow
// them) and the crash signals (faulthandler would print the parent's Python
// stack; the parent reports the crash instead), and dies with its parent
// (PR_SET_PDEATHSIG); the parent gives up on a child that runs past
// CUTLAX_JIT_COMPILE_TIMEOUT seconds (default 900).
//
// The parent's precompiled header (pch.hpp) is valid in the child: a fork
// keeps the address space that NVRTC's PCH heap lives in (measured: a
// compile with it takes 0.47 s in the child, 0.44 s in the process, 3.4 s
// without it). A fork of a JAX process costs ~10 ms.
//
// CUTLAX_JIT_FORK=0 compiles in the process instead (a crash then takes it
// down); so does a fork() that fails (no memory, a process limit).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "compiler.hpp"
#include "nvrtc.hpp"

namespace cutlax::jit {

// Whether compiles run in a child process (CUTLAX_JIT_FORK, read once).
bool child_compiles_enabled();

// Held around every NVRTC compile that runs in this process and around
// fork(), so that no child starts while another thread is inside NVRTC.
std::mutex& nvrtc_process_mutex();

struct ChildOutcome {
  enum class Status {
    kFinished,    // `output` is the child's run_nvrtc
    kCrashed,     // killed by SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE or SIGTRAP
    kKilled,      // killed by another signal, or exited without a result
    kTimedOut,    // ran past the timeout; the parent killed it
    kNotStarted,  // pipe() or fork() failed: `error` says why
  };
  Status status = Status::kFinished;
  int signal = 0;  // kCrashed, kKilled: the signal, 0 when it exited
  CompileOutput output;
  std::string error;
};

// run_nvrtc(api, text, entry, options) in a child process. Throws
// std::runtime_error as run_nvrtc does (the child's message is carried over).
ChildOutcome run_nvrtc_in_child(const Nvrtc& api, const std::string& text, const std::string& entry,
                                const std::vector<std::string>& options, double timeout_seconds);

// The compile of a cache miss: run_nvrtc in a child where possible (else in
// this process, under nvrtc_process_mutex). A crash is a failed compile
// (ok == false) whose log explains it and carries the log of a retry without
// the name expression; a child killed otherwise or timed out throws
// std::runtime_error (no compile error to show: the compile did not finish).
CompileOutput compile_isolated(const Nvrtc& api, const std::string& text, const std::string& entry,
                               const std::vector<std::string>& options);

// The log of a crashed compile of `entry`: what happened and why, then the
// log of the retry without the name expression (`retry_log`, or
// `retry_failed` when that compile crashed or ended otherwise too).
std::string crash_log(const std::string& entry, int signal, const std::string& nvrtc_version,
                      bool retry_compiled, const std::string& retry_log, bool retry_failed);

}  // namespace cutlax::jit
