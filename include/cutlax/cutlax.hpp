// The cutlax C++ API: everything an op library needs, in one include.
//
//   ffi.hpp       the XLA FFI namespace and CUTLAX_RETURN_IF_ERROR
//   dtype.hpp     element types and dtype dispatch
//   convert.hpp   to_float / from_float<T>: 16-bit conversions that vectorise on the host
//   check.hpp     argument checks returning ffi::Error
//   tensor.hpp    FFI buffers as cute::Tensor views with explicit layouts
//   exec.hpp      execution contexts (Host, Cuda) decoded from the FFI call
//   parallel.hpp  parallel_for over XLA:CPU's thread pool, for CPU twins
//   op.hpp        In<T>/Out<T>, CUTLAX_OP and CUTLAX_PARAMS: declaring an op
//   registry.hpp  the library's handler table, CUTLAX_LIBRARY
//   cuda.hpp      CUDA error mapping and launch helpers (nvcc only)
#pragma once

#include "cutlax/check.hpp"
#include "cutlax/convert.hpp"
#include "cutlax/dtype.hpp"
#include "cutlax/exec.hpp"
#include "cutlax/ffi.hpp"
#include "cutlax/op.hpp"
#include "cutlax/parallel.hpp"
#include "cutlax/registry.hpp"
#include "cutlax/tensor.hpp"
#if defined(__CUDACC__)
#include "cutlax/cuda.hpp"
#endif
