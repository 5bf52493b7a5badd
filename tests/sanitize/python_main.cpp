// A python3 whose executable carries ThreadSanitizer's runtime. TSan's shared
// runtime cannot be LD_PRELOADed into an uninstrumented python (it crashes
// before main on this toolchain), so scripts/sanitize.sh links this, the
// interpreter's own main, with -fsanitize=thread, and the instrumented
// cutlax extension then binds to the runtime in the executable. It starts
// in the base installation, outside any virtual environment, so sanitize.sh
// runs it with -S and the testing interpreter's sys.path in PYTHONPATH.
#include <Python.h>

int main(int argc, char** argv) { return Py_BytesMain(argc, argv); }
