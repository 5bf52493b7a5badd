// The handler table of the programs that link the CPU twins (cutlax_cpu_ops)
// outside the extension: the C++ tests and the fuzz harnesses. The twins
// register into it, and the tests and fuzz_handlers.cpp read it back through
// cutlax_library_handlers(). Every cutlax library has exactly one such
// translation unit (the extension's is src/module.cpp).
#include <cutlax/registry.hpp>

CUTLAX_LIBRARY()
