// One NVRTC compile of a kernel to a CUBIN: the program text, the options,
// the entry's lowered name, the log. No caching here (cache.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nvrtc.hpp"

namespace cutlax::jit {

struct CompileRequest {
  std::string source;
  std::string entry;  // "relu<float>": a __global__ function or template-id
  std::string arch;   // "sm_90a": a real architecture, for a CUBIN
  std::vector<std::string> include_dirs;
  std::vector<std::string> options;  // the caller's extra flags
};

struct CompileOutput {
  bool ok = false;  // false: the source does not compile, `log` says why
  std::vector<uint8_t> cubin;
  std::string lowered_name;
  std::string log;
  // nvrtcGetPCHCreateStatus: 0 when this compile created the PCH it was
  // asked for (--create-pch); -1 where NVRTC has no PCH API.
  NvrtcResult pch_create_status = -1;
  // NVRTC crashed (in a child process, child_compile.hpp); `log` says so.
  bool crashed = false;
};

// The file name NVRTC's messages give the user's source: "kernel.cu(3): error ...".
inline constexpr const char* kSourceName = "kernel.cu";

// Every NVRTC option of a request, in order: the fixed ones (C++17, the
// architecture, -default-device, -DNDEBUG), the include directories, then the
// caller's options.
std::vector<std::string> nvrtc_options(const CompileRequest& request);

// What NVRTC compiles: the prelude's #include, a #line marker so messages
// carry the user's own line numbers, then the source.
std::string program_text(const std::string& source);

// Compiles `text` with `options` (nvrtc_options plus any PCH flags). Throws
// std::runtime_error when NVRTC itself fails; a source that does not compile
// is a result with ok == false. An empty `entry` compiles for the side effect
// alone (building the PCH): no lowered name, no CUBIN.
CompileOutput run_nvrtc(const Nvrtc& api, const std::string& text, const std::string& entry,
                        const std::vector<std::string>& options);

}  // namespace cutlax::jit
