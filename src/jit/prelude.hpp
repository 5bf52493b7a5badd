// The text of include/cutlax/jit/tensor.hpp, embedded at build time
// (prelude.cpp.in), so NVRTC compiles exactly the header the extension's host
// code was built with: the kernel parameters' bytes match by construction.
#pragma once

#include <string_view>

namespace cutlax::jit {

inline constexpr const char* kPreludeName = "cutlax/jit/tensor.hpp";

std::string_view prelude_source();

}  // namespace cutlax::jit
