// One registration table per library. Every translation unit of a library adds
// its handlers with CUTLAX_OP (op.hpp); exactly one translation unit states
// CUTLAX_LIBRARY() (cutlax_add_op_library generates it), which defines the
// table and exports it through the C symbol `cutlax_library_handlers`. Python (cutlax.load_library,
// and the built-in ops through the same path) reads that table and registers each handler with
// jax.ffi under its target name and platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cutlax/ffi.hpp"

extern "C" {
// Bump when HandlerEntry changes layout.
#define CUTLAX_LIBRARY_ABI_VERSION 2

struct cutlax_handler_entry {
  const char* target;     // FFI target name, e.g. "cutlax_vector_add_v1"
  const char* platform;   // "cpu" or "CUDA"
  const char* signature;  // "vector_add(a, b) -> out": the op's name and its arguments'
  const char* types;      // "in:float32,any;out:float32;attrs:alpha:float32"
  XLA_FFI_Handler* handler;
};

struct cutlax_handler_table {
  int32_t abi_version;
  int32_t xla_ffi_api_major;  // the FFI headers the library was built with
  int32_t xla_ffi_api_minor;
  size_t size;
  const cutlax_handler_entry* entries;
};

// The library's table (defined by CUTLAX_LIBRARY()), for C++ hosts that call
// its handlers directly: the C++ tests, the fuzzers, the GPU sanitizer driver.
const cutlax_handler_table* cutlax_library_handlers();
}

namespace cutlax {

// Hidden visibility keeps each shared library's table its own, even when
// several cutlax libraries are loaded into one process.
__attribute__((visibility("hidden"))) std::vector<cutlax_handler_entry>& library_handlers();

struct HandlerRegistrar {
  HandlerRegistrar(const char* target, const char* platform, const char* signature,
                   const char* types, XLA_FFI_Handler* handler) {
    library_handlers().push_back({target, platform, signature, types, handler});
  }
};

}  // namespace cutlax

#define CUTLAX_CONCAT_(a, b) a##b
#define CUTLAX_CONCAT(a, b) CUTLAX_CONCAT_(a, b)

// Defines the library's table; state it in exactly one translation unit.
#define CUTLAX_LIBRARY()                                                            \
  __attribute__((visibility("hidden"))) std::vector<cutlax_handler_entry>&          \
  cutlax::library_handlers() {                                                      \
    static std::vector<cutlax_handler_entry> handlers;                              \
    return handlers;                                                                \
  }                                                                                 \
  extern "C" __attribute__((visibility("default"))) const cutlax_handler_table*     \
  cutlax_library_handlers() {                                                       \
    static cutlax_handler_table table;                                              \
    table = {CUTLAX_LIBRARY_ABI_VERSION, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR,      \
             cutlax::library_handlers().size(), cutlax::library_handlers().data()}; \
    return &table;                                                                  \
  }
