#include "elementwise.cuh"
#include "bias_relu.hpp"

CUTLAX_REGISTER(cutlax::ops::kBiasReluTarget, Cuda, cutlax::ops::bias_relu)
