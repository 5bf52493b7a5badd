#include "bias_relu.hpp"
#include "elementwise_cpu.hpp"

CUTLAX_OP(cutlax::ops::kBiasReluTarget, cutlax::ops::bias_relu<cutlax::Host>,
          "bias_relu(x, bias) -> out")
