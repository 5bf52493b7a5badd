# Locates the three header sets every cutlax library compiles against, and
# defines the bridge target on top of them:
#   cutlax::xla_ffi  XLA's FFI headers, from the jaxlib that will load the library
#   cutlax::cute     CUTLASS/CuTe headers, from PyPI's nvidia-cutlass
#   CUDA headers     cuda_runtime_api.h and CCCL, which CuTe needs even for host code
#   cutlax::bridge   the cutlax C++ API (CUTLAX_INCLUDE_DIR) with all of the above
# Shared by cutlax's own build and by users' builds (cutlaxConfig.cmake).
# Each missing piece stops the configure with what to install.
include_guard(GLOBAL)

find_package(Python 3.10 COMPONENTS Interpreter Development.Module REQUIRED)

function(_cutlax_python_query out code what hint)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "${code}"
    OUTPUT_VARIABLE value OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR value STREQUAL "")
    message(FATAL_ERROR "cutlax: cannot find ${what} with ${Python_EXECUTABLE}.\n"
                        "  ${hint}\n"
                        "  Or name the Python that has them (a virtual environment's, say): "
                        "-DPython_EXECUTABLE=/path/to/venv/bin/python\n"
                        "  (python said: ${err})")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# Each path is asked of Python again when the cached one is gone: pip's
# isolated build environments are temporary directories.
if(NOT CUTLAX_XLA_FFI_INCLUDE_DIR OR NOT EXISTS "${CUTLAX_XLA_FFI_INCLUDE_DIR}/xla/ffi/api/ffi.h")
  _cutlax_python_query(CUTLAX_XLA_FFI_INCLUDE_DIR
    "import jax; print(jax.ffi.include_dir())"
    "the XLA FFI headers (jax.ffi.include_dir())"
    "Install JAX into it: ${Python_EXECUTABLE} -m pip install jax  (build against the jaxlib you run with).")
endif()
# The jaxlib whose FFI headers these are: XLA loads a handler built against
# headers no newer than its own, so this is the oldest jaxlib the build runs on.
_cutlax_python_query(CUTLAX_JAXLIB_HEADERS_VERSION
  "import importlib.metadata as m; print(m.version('jaxlib'))"
  "the jaxlib version" "Install JAX into it: ${Python_EXECUTABLE} -m pip install jax.")
if(NOT EXISTS "${CUTLAX_XLA_FFI_INCLUDE_DIR}/xla/ffi/api/ffi.h")
  message(FATAL_ERROR "cutlax: ${CUTLAX_XLA_FFI_INCLUDE_DIR} has no xla/ffi/api/ffi.h; "
                      "reinstall jaxlib")
endif()

if(NOT CUTLAX_CUTLASS_DIR OR NOT EXISTS "${CUTLAX_CUTLASS_DIR}/include/cute/tensor.hpp")
  # find_spec locates the package without importing it (importing would need
  # nvidia-cutlass's Python dependencies, which the headers do not).
  _cutlax_python_query(CUTLAX_CUTLASS_DIR
    "import importlib.util, os; s = importlib.util.find_spec('cutlass_library'); print(os.path.join(list(s.submodule_search_locations)[0], 'source'))"
    "the CUTLASS/CuTe headers (PyPI package nvidia-cutlass)"
    "Install them into it: ${Python_EXECUTABLE} -m pip install --no-deps nvidia-cutlass==4.2.0.0.")
endif()
if(NOT EXISTS "${CUTLAX_CUTLASS_DIR}/include/cute/tensor.hpp")
  message(FATAL_ERROR "cutlax: no CuTe headers under ${CUTLAX_CUTLASS_DIR}/include; "
                      "pip install --no-deps nvidia-cutlass==4.2.0.0")
endif()

# CUDA headers: the toolkit when present, else the PyPI wheels of the runtime and CCCL.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(CUTLAX_CUDA_HEADER_DIRS ${CUDAToolkit_INCLUDE_DIRS})
  foreach(dir ${CUDAToolkit_INCLUDE_DIRS})
    if(EXISTS "${dir}/cccl")
      list(APPEND CUTLAX_CUDA_HEADER_DIRS "${dir}/cccl")
    endif()
  endforeach()
else()
  _cutlax_python_query(CUTLAX_CUDA_HEADER_DIRS
    "import nvidia, os; r = list(nvidia.__path__)[0]; print(';'.join(os.path.join(r, d, 'include') for d in ('cuda_runtime', 'cuda_cccl')))"
    "CUDA headers (no CUDA toolkit found)"
    "Install a CUDA toolkit, or: ${Python_EXECUTABLE} -m pip install nvidia-cuda-runtime nvidia-cuda-cccl.")
endif()

add_library(cutlax_xla_ffi INTERFACE)
target_include_directories(cutlax_xla_ffi SYSTEM INTERFACE "${CUTLAX_XLA_FFI_INCLUDE_DIR}")
add_library(cutlax::xla_ffi ALIAS cutlax_xla_ffi)

add_library(cutlax_cute INTERFACE)
target_include_directories(cutlax_cute SYSTEM INTERFACE
  "${CUTLAX_CUTLASS_DIR}/include" ${CUTLAX_CUDA_HEADER_DIRS})
# CuTe's vectorised copies reinterpret element arrays as wider words
# (uint128_t). nvcc allows that; host compilers at -O2 and above may reorder
# such accesses under strict aliasing and return stale values (seen with g++
# 12: a 128-bit copy of a bias run read as zeros in the CPU twin).
# -fno-trapping-math: no code here reads floating-point exception flags, and
# without it g++ will not turn a conditional whose arms do float arithmetic
# into a vector select, so CPU loops over 16-bit elements stay scalar. It
# changes no result (no reassociation, no fast-math).
target_compile_options(cutlax_cute INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-fno-strict-aliasing -fno-trapping-math>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fno-strict-aliasing>)
add_library(cutlax::cute ALIAS cutlax_cute)

add_library(cutlax_bridge INTERFACE)
target_include_directories(cutlax_bridge INTERFACE "${CUTLAX_INCLUDE_DIR}")
target_link_libraries(cutlax_bridge INTERFACE cutlax::xla_ffi cutlax::cute)
# CuTe calls constexpr host functions from device code.
target_compile_options(cutlax_bridge INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
add_library(cutlax::bridge ALIAS cutlax_bridge)

message(STATUS "cutlax: XLA FFI headers: ${CUTLAX_XLA_FFI_INCLUDE_DIR} (jaxlib ${CUTLAX_JAXLIB_HEADERS_VERSION})")
message(STATUS "cutlax: CUTLASS headers: ${CUTLAX_CUTLASS_DIR}/include")
