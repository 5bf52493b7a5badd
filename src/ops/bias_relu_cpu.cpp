#include "elementwise_cpu.hpp"
#include "bias_relu.hpp"

CUTLAX_REGISTER(cutlax::ops::kBiasReluTarget, Host, cutlax::ops::bias_relu)
