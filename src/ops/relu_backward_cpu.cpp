// relu_backward's CPU twin: relu_backward.hpp over the host elementwise loops.
#include "elementwise_cpu.hpp"
#include "relu_backward.hpp"
