// saxpy's CPU twin: saxpy.hpp over the host elementwise loops.
#include "elementwise_cpu.hpp"
#include "saxpy.hpp"
