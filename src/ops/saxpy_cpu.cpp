#include "elementwise_cpu.hpp"
#include "saxpy.hpp"

CUTLAX_OP(cutlax::ops::kSaxpyTarget, cutlax::ops::saxpy<cutlax::Host>, "saxpy(x, y) -> out")
CUTLAX_OP(cutlax::ops::kSaxpyDynamicTarget, cutlax::ops::saxpy_dynamic<cutlax::Host>,
          "saxpy_dynamic(alpha, x, y) -> out")
