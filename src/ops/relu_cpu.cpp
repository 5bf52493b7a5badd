#include "elementwise_cpu.hpp"
#include "relu.hpp"

CUTLAX_OP(cutlax::ops::kReluTarget, cutlax::ops::relu<cutlax::Host>, "relu(x) -> out")
