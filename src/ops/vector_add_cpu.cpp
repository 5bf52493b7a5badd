// vector_add's CPU twin.
#include "elementwise_cpu.hpp"
#include "vector_add.hpp"

namespace cutlax::ops {

template <class T>
ffi::Error vector_add_launch(Host, Vector<T> out, Vector<const T> a,
                             Vector<const T> b) {
  cpu::map(Add<T>{}, out, a, b);
  return ffi::Error::Success();
}

}  // namespace cutlax::ops

CUTLAX_REGISTER(cutlax::ops::kVectorAddTarget, Host, cutlax::ops::vector_add)
