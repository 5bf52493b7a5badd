#include "elementwise.cuh"
#include "vector_add.hpp"

CUTLAX_REGISTER(cutlax::ops::kVectorAddTarget, Cuda, cutlax::ops::vector_add)
