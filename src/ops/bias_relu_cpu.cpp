// bias_relu's CPU twin: bias_relu.hpp over the host elementwise loops.
#include "bias_relu.hpp"
#include "elementwise_cpu.hpp"
