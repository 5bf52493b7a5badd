// vector_add for CUDA: vector_add.hpp over the CUDA elementwise kernel.
#include "elementwise.cuh"
#include "vector_add.hpp"
