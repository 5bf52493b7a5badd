#include "bias_relu.hpp"
#include "elementwise.cuh"

CUTLAX_REGISTER(cutlax::ops::kBiasReluTarget, Cuda, cutlax::ops::bias_relu)
