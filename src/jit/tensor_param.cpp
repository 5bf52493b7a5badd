#include "tensor_param.hpp"

#include <cstring>
#include <cutlax/jit/tensor.hpp>
#include <type_traits>
#include <utility>

namespace cutlax::jit {
namespace {

template <int Rank>
TensorParam make_param(void* data, const int64_t* dims) {
  using HostTensor = Tensor<unsigned char, Rank>;
  static_assert(std::is_trivially_copyable_v<HostTensor>, "kernel parameters are copied bytewise");
  static_assert(sizeof(HostTensor) <= sizeof(TensorParam::bytes), "TensorParam is too small");
  static_assert(sizeof(HostTensor) == (Rank == 0 ? 8 : 16 * Rank), "tensor_param_size is wrong");
  const HostTensor tensor = make_row_major_tensor<Rank>(static_cast<unsigned char*>(data), dims);
  TensorParam param;
  std::memcpy(param.bytes, &tensor, sizeof(tensor));
  param.size = sizeof(tensor);
  return param;
}

template <int... Ranks>
TensorParam dispatch(void* data, const int64_t* dims, size_t rank,
                     std::integer_sequence<int, Ranks...>) {
  using Maker = TensorParam (*)(void*, const int64_t*);
  static constexpr Maker kMakers[] = {&make_param<Ranks>...};
  return kMakers[rank](data, dims);
}

}  // namespace

size_t tensor_param_size(size_t rank) { return rank == 0 ? 8 : 16 * rank; }

TensorParam make_tensor_param(void* data, const int64_t* dims, size_t rank) {
  return dispatch(data, dims, rank, std::make_integer_sequence<int, kMaxRank + 1>{});
}

}  // namespace cutlax::jit
