// saxpy for CUDA: saxpy.hpp over the CUDA elementwise kernel.
#include "elementwise.cuh"
#include "saxpy.hpp"
