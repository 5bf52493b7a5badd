// A kernel's parameter list, read back from the entry's lowered (mangled)
// name that NVRTC returns, so Python can check the arrays of a call against
// it at trace time, on a machine without a GPU.
//
// The name is demangled (abi::__cxa_demangle) and the parameter list of the
// demangled text is parsed. cutlax::jit::Tensor<T, R> is an alias, so the
// mangled name holds what it stands for:
//
//   cute::Tensor<cute::ViewEngine<cute::gmem_ptr<float const*> >,
//                cute::Layout<cute::tuple<long long, long long>,
//                             cute::tuple<long long, cute::C<1> > > >
//
// (rank 0 is the layout cute::tuple<cute::C<1> >, cute::tuple<cute::C<0> >).
// A TMA descriptor is cute::TmaDescriptor under NVRTC (CUtensorMap_st where
// cuda.h's CUtensorMap is used). Any other parameter type is kOther: the
// caller does not check it.
#pragma once

#include <string>
#include <vector>

namespace cutlax::jit {

struct KernelParameter {
  enum class Kind { kTensor, kTmaDescriptor, kOther };
  Kind kind = Kind::kOther;
  std::string type;       // the parameter's type as demangled
  std::string element;    // kTensor: the element type without const ("float", "cutlass::half_t")
  bool is_const = false;  // kTensor: Tensor<const T, R>
  int rank = -1;          // kTensor: R
};

struct KernelSignature {
  // false when the name is not a mangled C++ function name (an extern "C"
  // kernel) or its parameter list could not be read: nothing to check.
  bool known = false;
  std::string demangled;
  std::vector<KernelParameter> parameters;
};

// The demangled form of an Itanium-mangled name, or "" when it is not one.
std::string demangle(const std::string& mangled);

// The parameters of the function whose demangled name is `demangled`
// ("void relu<float>(cute::Tensor<...>, ...)").
KernelSignature parse_demangled_signature(const std::string& demangled);

// demangle, then parse_demangled_signature.
KernelSignature kernel_signature(const std::string& lowered_name);

// "Tensor<const float, 1>", "TmaDescriptor", or the demangled type.
std::string describe(const KernelParameter& parameter);

}  // namespace cutlax::jit
