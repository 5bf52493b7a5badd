#include "elementwise_cpu.hpp"
#include "relu.hpp"

CUTLAX_REGISTER(cutlax::ops::kReluTarget, Host, cutlax::ops::relu)
