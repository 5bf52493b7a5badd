// vector_add's CPU twin: vector_add.hpp over the host elementwise loops.
#include "elementwise_cpu.hpp"
#include "vector_add.hpp"
