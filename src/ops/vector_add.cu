#include "elementwise.cuh"
#include "vector_add.hpp"

CUTLAX_OP(cutlax::ops::kVectorAddTarget, cutlax::ops::vector_add<cutlax::Cuda>,
          "vector_add(a, b) -> out")
