// The cutlax C++ API: everything an op library needs, in one include.
//
//   ffi.hpp        the XLA FFI namespace and CUTLAX_RETURN_IF_ERROR
//   dtype.hpp      element types (one table, both directions) and dtype dispatch
//   convert.hpp    to_float / from_float<T>: 16-bit conversions that vectorise on the host
//   check.hpp      argument checks returning ffi::Error
//   tensor.hpp     FFI buffers as cute::Tensor views; In<T>, Out<T>, Scratch<T>, Buffer<Types>
//   exec.hpp       execution contexts (Host, Cuda) decoded from the FFI call
//   parallel.hpp   parallel_for over XLA:CPU's thread pool, for CPU twins
//   params.hpp     CUTLAX_PARAMS: a struct of static attributes
//   signature.hpp  how a launcher's parameters describe the op to Python
//   op.hpp         CUTLAX_OP and CUTLAX_OP_TEMPLATE: declaring an op
//   registry.hpp   the library's handler table, CUTLAX_LIBRARY
//   cuda.hpp       CUDA error mapping and launch checks
#pragma once

#include "cutlax/check.hpp"
#include "cutlax/convert.hpp"
#include "cutlax/cuda.hpp"
#include "cutlax/dtype.hpp"
#include "cutlax/exec.hpp"
#include "cutlax/ffi.hpp"
#include "cutlax/op.hpp"
#include "cutlax/parallel.hpp"
#include "cutlax/params.hpp"
#include "cutlax/registry.hpp"
#include "cutlax/signature.hpp"
#include "cutlax/tensor.hpp"
