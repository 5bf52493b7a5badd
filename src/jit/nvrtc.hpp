// NVRTC, found at run time with dlopen: the extension has no link-time
// dependency on it, so the CPU-only build imports without a CUDA toolkit and
// only cutlax.jit.compile needs one (or the nvidia-cuda-nvrtc wheel).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cutlax::jit {

// nvrtc.h's types, declared here so no CUDA header is needed to build.
struct NvrtcProgramHandle;
using NvrtcProgram = NvrtcProgramHandle*;
using NvrtcResult = int;
inline constexpr NvrtcResult kNvrtcSuccess = 0;

struct Nvrtc {
  NvrtcResult (*version)(int* major, int* minor);
  const char* (*get_error_string)(NvrtcResult result);
  NvrtcResult (*create_program)(NvrtcProgram* program, const char* source, const char* name,
                                int num_headers, const char* const* headers,
                                const char* const* include_names);
  NvrtcResult (*destroy_program)(NvrtcProgram* program);
  NvrtcResult (*compile_program)(NvrtcProgram program, int num_options, const char* const* options);
  NvrtcResult (*get_program_log_size)(NvrtcProgram program, size_t* size);
  NvrtcResult (*get_program_log)(NvrtcProgram program, char* log);
  NvrtcResult (*get_cubin_size)(NvrtcProgram program, size_t* size);
  NvrtcResult (*get_cubin)(NvrtcProgram program, char* cubin);
  NvrtcResult (*add_name_expression)(NvrtcProgram program, const char* name_expression);
  NvrtcResult (*get_lowered_name)(NvrtcProgram program, const char* name_expression,
                                  const char** lowered_name);
  // The precompiled-header API (NVRTC 12.8 and later); null when absent.
  NvrtcResult (*set_pch_heap_size)(size_t size);
  NvrtcResult (*get_pch_create_status)(NvrtcProgram program);

  std::string path;          // the library that was loaded
  std::string version_text;  // "13.0"
};

// Directories searched for libnvrtc before the system's library path (the
// nvidia-cuda-nvrtc wheel's lib folder, say). Takes effect for the next load
// attempt; a library already loaded stays.
void set_nvrtc_search_dirs(std::vector<std::string> dirs);

// NVRTC, loaded on first use. Throws std::runtime_error saying where it
// looked when no library loads; a later call tries again.
const Nvrtc& nvrtc();

// Whether nvrtc() has loaded the library already (then it returns at once).
bool nvrtc_loaded();

// "13.0 (/path/to/libnvrtc.so)", or "not found", without throwing.
std::string nvrtc_version_or_reason();

}  // namespace cutlax::jit
