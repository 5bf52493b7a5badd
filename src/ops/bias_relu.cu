// bias_relu for CUDA: bias_relu.hpp over the CUDA elementwise kernel.
#include "bias_relu.hpp"
#include "elementwise.cuh"
