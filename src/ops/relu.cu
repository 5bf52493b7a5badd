#include "elementwise.cuh"
#include "relu.hpp"

CUTLAX_REGISTER(cutlax::ops::kReluTarget, Cuda, cutlax::ops::relu)
