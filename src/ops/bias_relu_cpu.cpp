#include "bias_relu.hpp"
#include "elementwise_cpu.hpp"

CUTLAX_REGISTER(cutlax::ops::kBiasReluTarget, Host, cutlax::ops::bias_relu)
