// The cutlax._cutlax.jit submodule: NVRTC compiles with their caches, and the
// FFI handlers of the cutlax_jit_v1 and _v2 targets for Python to register.
#pragma once

#include <nanobind/nanobind.h>

namespace cutlax::jit {

void bind(nanobind::module_& parent);

}  // namespace cutlax::jit
