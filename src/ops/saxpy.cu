#include "elementwise.cuh"
#include "saxpy.hpp"

CUTLAX_OP(cutlax::ops::kSaxpyTarget, cutlax::ops::saxpy<cutlax::Cuda>, "saxpy(x, y) -> out")
CUTLAX_OP(cutlax::ops::kSaxpyDynamicTarget, cutlax::ops::saxpy_dynamic<cutlax::Cuda>,
          "saxpy_dynamic(alpha, x, y) -> out")
