// vector_add on the GPU: the classic CuTe 3-D view kernel (elementwise.cuh).
#include "elementwise.cuh"
#include "vector_add.hpp"

namespace cutlax::ops {

template <class T>
ffi::Error vector_add_launch(Cuda exec, Vector<T> out, Vector<const T> a,
                             Vector<const T> b) {
  return kernels::launch_map_3d(exec, "vector_add", Add<T>{}, out, a, b);
}

}  // namespace cutlax::ops

CUTLAX_REGISTER(cutlax::ops::kVectorAddTarget, Cuda, cutlax::ops::vector_add)
