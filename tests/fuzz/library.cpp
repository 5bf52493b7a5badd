// The handler table of the fuzz harnesses: the CPU twins linked into each
// harness (cutlax_cpu_ops) register into it, and fuzz_handlers.cpp reads it
// back through cutlax_library_handlers(). Every cutlax library has exactly
// one such translation unit; it is not named fuzz_*.cpp, so it is no harness.
#include <cutlax/registry.hpp>

CUTLAX_LIBRARY()
