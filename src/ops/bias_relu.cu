#include "bias_relu.hpp"
#include "elementwise.cuh"

CUTLAX_OP(cutlax::ops::kBiasReluTarget, cutlax::ops::bias_relu<cutlax::Cuda>,
          "bias_relu(x, bias) -> out")
