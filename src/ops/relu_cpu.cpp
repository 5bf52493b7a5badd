// relu's CPU twin: relu.hpp over the host elementwise loops.
#include "elementwise_cpu.hpp"
#include "relu.hpp"
