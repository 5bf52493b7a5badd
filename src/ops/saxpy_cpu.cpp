#include "elementwise_cpu.hpp"
#include "saxpy.hpp"

CUTLAX_REGISTER(cutlax::ops::kSaxpyTarget, Host, cutlax::ops::saxpy)
CUTLAX_REGISTER(cutlax::ops::kSaxpyDynamicTarget, Host, cutlax::ops::saxpy_dynamic)
