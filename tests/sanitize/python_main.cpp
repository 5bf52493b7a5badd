// A python3 whose executable carries ThreadSanitizer's runtime. TSan's shared
// runtime cannot be LD_PRELOADed into an uninstrumented python (it crashes
// before main on this toolchain), so scripts/sanitize.sh links this, the
// interpreter's own main, with -fsanitize=thread, and the instrumented
// cutlax extension then binds to the runtime in the executable.
#include <Python.h>

int main(int argc, char** argv) { return Py_BytesMain(argc, argv); }
