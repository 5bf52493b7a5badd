#include "elementwise.cuh"
#include "relu.hpp"

CUTLAX_OP(cutlax::ops::kReluTarget, cutlax::ops::relu<cutlax::Cuda>, "relu(x) -> out")
