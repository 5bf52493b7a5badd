// relu_backward for CUDA: relu_backward.hpp over the CUDA elementwise kernel.
#include "elementwise.cuh"
#include "relu_backward.hpp"
