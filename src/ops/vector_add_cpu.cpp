#include "elementwise_cpu.hpp"
#include "vector_add.hpp"

CUTLAX_REGISTER(cutlax::ops::kVectorAddTarget, Host, cutlax::ops::vector_add)
