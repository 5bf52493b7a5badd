#include "elementwise.cuh"
#include "saxpy.hpp"

CUTLAX_REGISTER(cutlax::ops::kSaxpyTarget, Cuda, cutlax::ops::saxpy)
CUTLAX_REGISTER(cutlax::ops::kSaxpyDynamicTarget, Cuda, cutlax::ops::saxpy_dynamic)
