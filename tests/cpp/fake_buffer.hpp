// An XLA FFI buffer made by hand, so bridge code can be tested without XLA.
#pragma once

#include <cutlax/cutlax.hpp>
#include <vector>

namespace cutlax::testing {

struct FakeBuffer {
  std::vector<int64_t> dims;
  std::vector<char> storage;
  XLA_FFI_Buffer raw;

  FakeBuffer(ffi::DataType dtype, std::vector<int64_t> shape) : dims(std::move(shape)) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    storage.resize(n * ffi::ByteWidth(dtype) + 16);
    raw = {XLA_FFI_Buffer_STRUCT_SIZE,           nullptr,
           static_cast<XLA_FFI_DataType>(dtype), storage.data(),
           static_cast<int64_t>(dims.size()),    dims.data()};
  }
  ffi::AnyBuffer any() const { return ffi::AnyBuffer(&raw); }
  ffi::Result<ffi::AnyBuffer> result() const { return any(); }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(storage.data());
  }
};

}  // namespace cutlax::testing
