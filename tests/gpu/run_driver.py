"""Runs the sanitizer driver (tests/gpu/sanitize_driver.cpp, built as a shared
library) inside this Python process: scripts/gpu_check.sh, step sanitize.

    python3 -S tests/gpu/run_driver.py DRIVER.so EXTENSION.so [driver options...]

cutlax's extension is a Python extension module: it refers to the Python C
API's symbols (PyExc_ValueError, _Py_NoneStruct, ...) without linking
libpython, so a plain executable cannot dlopen it unless it finds and loads
the right libpython first, and a statically linked interpreter has none. A
python3 process provides those symbols whatever its build. Nothing else
happens here: neither cutlax nor JAX is imported (-S skips site too), so all
CUDA work in the process is the driver's.
"""

import ctypes
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    driver = ctypes.CDLL(sys.argv[1])
    entry = driver.cutlax_sanitize_main
    entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    entry.restype = ctypes.c_int
    args = [b"sanitize_driver"] + [arg.encode() for arg in sys.argv[2:]]
    argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    sys.stdout.flush()
    return entry(len(args), argv)


if __name__ == "__main__":
    sys.exit(main())
