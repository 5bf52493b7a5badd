// A part of the extension module that the code owning it adds: functions on
// the module and entries of build_info(). module.cpp knows no op; an op that
// has something to tell Python beyond its handlers (which go through the
// library table) states it in a file of its own, ops/<op>_module.cpp, with
// CUTLAX_MODULE_PART. Those files are compiled into the extension alone
// (src/CMakeLists.txt), not into the CPU twins' objects that the C++ tests
// and the fuzzers link.
#pragma once

#include <nanobind/nanobind.h>

#include <vector>

namespace cutlax {

struct ModulePart {
  void (*bind)(nanobind::module_& module);   // adds functions; may be null
  void (*info)(nanobind::dict& build_info);  // adds build_info() entries; may be null
};

// Every part, in the order their translation units were initialised
// (defined in module.cpp).
std::vector<ModulePart>& module_parts();

struct ModulePartRegistrar {
  explicit ModulePartRegistrar(ModulePart part) { module_parts().push_back(part); }
};

}  // namespace cutlax

#define CUTLAX_MODULE_PART(bind, info)                                                      \
  static const ::cutlax::ModulePartRegistrar CUTLAX_MODULE_PART_CONCAT(cutlax_module_part_, \
                                                                       __LINE__) {          \
    { bind, info }                                                                          \
  }
#define CUTLAX_MODULE_PART_CONCAT_(a, b) a##b
#define CUTLAX_MODULE_PART_CONCAT(a, b) CUTLAX_MODULE_PART_CONCAT_(a, b)
