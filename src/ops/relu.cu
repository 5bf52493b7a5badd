// relu for CUDA: relu.hpp over the CUDA elementwise kernel.
#include "elementwise.cuh"
#include "relu.hpp"
