#include "elementwise_cpu.hpp"
#include "vector_add.hpp"

CUTLAX_OP(cutlax::ops::kVectorAddTarget, cutlax::ops::vector_add<cutlax::Host>,
          "vector_add(a, b) -> out")
