// The XLA FFI, as cutlax code sees it: the `ffi` namespace alias and the
// early-return macro every check in the bridge composes with.
#pragma once

#include "xla/ffi/api/ffi.h"

namespace cutlax {
namespace ffi = ::xla::ffi;
// What a handler or launcher returns: ffi::Error::Success(), or an error that
// surfaces in Python as an exception (InvalidArgument, Internal, ...).
using Error = ffi::Error;
}  // namespace cutlax

// Evaluates an expression producing an ffi::Error and returns it from the
// enclosing function when it is a failure.
#define CUTLAX_RETURN_IF_ERROR(expr)                   \
  do {                                                 \
    ::xla::ffi::Error cutlax_error_ = (expr);          \
    if (cutlax_error_.failure()) return cutlax_error_; \
  } while (0)
