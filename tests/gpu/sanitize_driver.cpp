// Every CUDA kernel of cutlax, called through its registered FFI handler at
// sizes that exercise every tail, for compute-sanitizer (scripts/gpu_check.sh,
// step `sanitize`). JAX under the sanitizer is far too slow (initcheck alone
// ran past 200 s), so this driver calls the handlers the way XLA does, from
// the installed extension's table (include/cutlax/registry.hpp), through the
// fake call frame of tests/cpp/fake_ffi.hpp, on buffers it allocates itself:
//
//   - every operand and result is a cudaMalloc of exactly its element count
//     (a zero-sized one is a null pointer), so memcheck reports a read or a
//     write one element past the end;
//   - operands are filled with cudaMemcpy and results are left
//     uninitialised, so initcheck reports a kernel that reads a result or
//     scratch before writing it; every result is copied back whole, which
//     initcheck (--check-api-memory-access, its default) reports when a
//     kernel left part of it unwritten (except the SM90 GEMMs' TMA-stored
//     results, which initcheck cannot follow: see run_case);
//   - each case also checks the results against a host computation (exact
//     for the elementwise ops: every input is a multiple of 1/64 in [-2, 2],
//     so the float arithmetic is exact and only the final rounding remains),
//     so the cases are known to do the work they claim.
//
// Cases per target: sizes that are not a multiple of the block, the vector
// width or the tile, sizes 0 and 1, rank 0 and rank 3, buffers one element
// off 16-byte alignment (the scalar kernels), every SM90 GEMM kernel that
// is built (src/ops/gemm_kernels.def) with bias, activations, aux
// and the transposed forms, and refusals: calls the handler must reject
// before launching anything (memcheck would see a launch over the too-small
// buffers). Every target in the table must have cases, and each target's
// signature types must be the ones the cases were written for, so a new op,
// dtype or attribute fails here instead of going unchecked.
//
// The extension is a Python extension module: it refers to the Python C API's
// symbols without linking libpython. This file is therefore built as a shared
// library whose entry point, cutlax_sanitize_main, tests/gpu/run_driver.py
// calls from a python3 process, which provides those symbols whatever its
// build (no cutlax or JAX import: all CUDA work is this driver's).
//
//   python3 -S tests/gpu/run_driver.py DRIVER.so EXTENSION.so [options]
//     --list            print the cases and check them against the table; no CUDA
//     --cpu             run the cases through the CPU twins instead: checks this
//                       driver (call frames, refusals, references) without a GPU
//     --cases reduced   fewer GEMM cases, for the slow tools (racecheck, initcheck)
//     --filter TEXT     only the cases whose description contains TEXT
//     --quiet           print failures and the summary only
//     --default-stream  launch on the legacy default stream instead of a created one
//
// It exits 0 when every case passed, 1 otherwise; a case that breaks the CUDA
// context stops the run, so the last case printed is the one to look at.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cutlax/registry.hpp"
#include "fake_ffi.hpp"
#include "ops/gemm_configs.hpp"

namespace {

using cutlax::testing::CallOutcome;
using cutlax::testing::FakeCall;
using cutlax::testing::FakeExecutionContext;

constexpr XLA_FFI_DataType F32 = XLA_FFI_DataType_F32;
constexpr XLA_FFI_DataType F16 = XLA_FFI_DataType_F16;
constexpr XLA_FFI_DataType BF16 = XLA_FFI_DataType_BF16;
constexpr XLA_FFI_DataType F64 = XLA_FFI_DataType_F64;
constexpr XLA_FFI_DataType S64 = XLA_FFI_DataType_S64;
constexpr XLA_FFI_DataType kFloatTypes[] = {F32, F16, BF16};

// ---------------------------------------------------------------------------
// Element types on the host: the cases hold float values and encode them in
// the buffer's dtype, rounding to nearest even as the kernels' from_float does.

const char* dtype_name(XLA_FFI_DataType dtype) {
  switch (dtype) {
    case F32:
      return "f32";
    case F16:
      return "f16";
    case BF16:
      return "bf16";
    case F64:
      return "f64";
    default:
      return "?";
  }
}

size_t byte_width(XLA_FFI_DataType dtype) {
  switch (dtype) {
    case F16:
    case BF16:
      return 2;
    case F64:
      return 8;
    default:
      return 4;
  }
}

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint16_t half_from_float(float value) {
  uint32_t f = bits_of(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  f &= 0x7fffffffu;
  if (f >= 0x7f800000u) return uint16_t(sign | (f > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (f >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to 65520 or more: infinity
  if (f < 0x38800000u) {  // below 2^-14: a subnormal half, its mantissa is value * 2^24
    return uint16_t(sign | uint32_t(std::nearbyint(float_of(f) * 16777216.0f)));
  }
  const uint32_t rounded = f + 0xfffu + ((f >> 13) & 1u);   // drop 13 bits, nearest even
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));  // exponent bias 127 -> 15
}

float half_to_float(uint16_t h) {
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(float(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? NAN : INFINITY;
  } else {
    magnitude = std::ldexp(float(mantissa | 0x400u), int(exponent) - 25);
  }
  return (h & 0x8000u) ? -magnitude : magnitude;
}

uint16_t bf16_from_float(float value) {
  const uint32_t f = bits_of(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x40u);  // quiet NaN
  return uint16_t((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

float bf16_to_float(uint16_t b) { return float_of(uint32_t(b) << 16); }

// `value` as the dtype holds it (the rounding the kernel's store does).
float round_to(XLA_FFI_DataType dtype, float value) {
  if (dtype == F16) return half_to_float(half_from_float(value));
  if (dtype == BF16) return bf16_to_float(bf16_from_float(value));
  return value;
}

std::vector<char> encode(XLA_FFI_DataType dtype, const std::vector<float>& values) {
  std::vector<char> bytes(values.size() * byte_width(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == F32) {
      std::memcpy(&bytes[i * 4], &values[i], 4);
    } else if (dtype == F64) {
      const double v = values[i];
      std::memcpy(&bytes[i * 8], &v, 8);
    } else {
      const uint16_t v = dtype == F16 ? half_from_float(values[i]) : bf16_from_float(values[i]);
      std::memcpy(&bytes[i * 2], &v, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(XLA_FFI_DataType dtype, const std::vector<char>& bytes) {
  std::vector<float> values(bytes.size() / byte_width(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == F32) {
      std::memcpy(&values[i], &bytes[i * 4], 4);
    } else if (dtype == F64) {
      double v;
      std::memcpy(&v, &bytes[i * 8], 8);
      values[i] = float(v);
    } else {
      uint16_t v;
      std::memcpy(&v, &bytes[i * 2], 2);
      values[i] = dtype == F16 ? half_to_float(v) : bf16_to_float(v);
    }
  }
  return values;
}

// ---------------------------------------------------------------------------
// Cases.

struct ArraySpec {
  XLA_FFI_DataType dtype;
  std::vector<int64_t> dims;
  // Elements allocated before the data: 1 puts the data off 16-byte alignment
  // (cudaMalloc's are 256-byte aligned), which selects the scalar kernels.
  int64_t offset = 0;
  // A fixed value for every element instead of the pseudo-random fill (the
  // dynamic alpha).
  bool constant = false;
  float value = 0;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

struct AttrSpec {
  std::string name;
  XLA_FFI_DataType dtype;  // F32 or S64, as the handler binds it
  double value;
};

// An operand or result as the host sees it after the call.
struct HostArray {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// Compares a case's results with the host's; returns "" or what differs.
using Check = std::function<std::string(const std::vector<HostArray>& args,
                                        const std::vector<HostArray>& rets)>;

struct Case {
  std::string target;
  std::vector<ArraySpec> args, rets;
  std::vector<AttrSpec> attrs;
  std::string refusal;             // non-empty: the handler must fail with a message containing it
  bool refusal_cuda_only = false;  // the CUDA launcher's limit: the CPU twin takes the call
  Check check;                     // results against the host (none for refusals)
  bool sm90 = false;               // an SM90 GEMM kernel, built for Hopper only
};

// `c` changed by `change` into a call the handler must refuse, with a
// message containing `message` (so there are no results to check).
Case refused(Case c, const char* message, const std::function<void(Case&)>& change = {}) {
  if (change) change(c);
  c.refusal = message;
  c.check = nullptr;
  return c;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string describe(const Case& c) {
  std::string text = c.target;
  auto arrays = [&](const std::vector<ArraySpec>& specs) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const ArraySpec& a = specs[i];
      text += std::string(i ? ", " : " ") + dtype_name(a.dtype) + shape_text(a.dims);
      if (a.offset) text += "+" + std::to_string(a.offset);  // elements off alignment
    }
  };
  arrays(c.args);
  text += " ->";
  arrays(c.rets);
  for (const AttrSpec& a : c.attrs) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", a.value);
    text += " " + a.name + "=" + value;
  }
  if (!c.refusal.empty()) text += " [refused: '" + c.refusal + "']";
  return text;
}

// The signature types each target's cases were written for: the table's
// `types` text (signature.hpp). A change there (a new dtype, attribute or
// operand) needs new cases here.
const std::map<std::string, std::string>& expected_types() {
  static const std::map<std::string, std::string> types = {
      {"cutlax_vector_add_v1",
       "in:float32|float16|bfloat16,float32|float16|bfloat16;out:any;attrs:;scratch:"},
      {"cutlax_saxpy_v1",
       "in:float32|float16|bfloat16,float32|float16|bfloat16;out:any;attrs:alpha:float32;"
       "scratch:"},
      {"cutlax_saxpy_dynamic_v1",
       "in:float32,float32|float16|bfloat16,float32|float16|bfloat16;out:any;attrs:;scratch:"},
      {"cutlax_relu_v1", "in:float32|float16|bfloat16;out:any;attrs:;scratch:"},
      {"cutlax_relu_backward_v1",
       "in:float32|float16|bfloat16,float32|float16|bfloat16;out:any;attrs:;scratch:"},
      {"cutlax_bias_relu_v1",
       "in:float32|float16|bfloat16,float32|float16|bfloat16;out:any;attrs:;scratch:"},
      {"cutlax_bias_relu_backward_v1",
       "in:float32|float16|bfloat16,float32|float16|bfloat16;out:any,any,float32;attrs:;"
       "scratch:2"},
      {"cutlax_gemm_tiled_v1", "in:float32,float32;out:any;attrs:;scratch:"},
      {"cutlax_gemm_v1",
       "in:bfloat16|float16|float32,bfloat16|float16|float32,bfloat16|float16|float32;out:any;"
       "attrs:activation:int64,config:int64,transpose:int64;scratch:"},
      {"cutlax_gemm_aux_v1",
       "in:bfloat16|float16|float32,bfloat16|float16|float32,bfloat16|float16|float32;out:any,"
       "any;attrs:activation:int64,config:int64,transpose:int64;scratch:"},
  };
  return types;
}

// Results must equal `want` within atol + rtol * |want| per element.
std::string compare(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                    float rtol = 0, const std::vector<float>* atol = nullptr) {
  if (got.size() != want.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size());
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tolerance = (atol ? (*atol)[i] : 0.0f) + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {  // NaN fails
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return "";
  char text[200];
  std::snprintf(text, sizeof text,
                "%s: %zu of %zu elements differ; first at flat index %zu: %.8g, "
                "expected %.8g",
                what, bad, got.size(), first, double(got[first]), double(want[first]));
  return text;
}

// --- elementwise: vector_add, saxpy, saxpy_dynamic, relu, relu_backward --

// Flat sizes around every boundary the kernel has: 16-byte runs of 4 (f32)
// or 8 (16-bit) elements, blocks of 256 runs (1024 and 2048 elements), the
// empty array and one element.
const std::vector<int64_t> kFlatSizes = {0,   1,    2,    3,    7,    8,    31,   127,  255,
                                         257, 1023, 1024, 1025, 2047, 2048, 2049, 4099, 65537};
// Also with every buffer one element off alignment: the scalar kernel.
const std::vector<int64_t> kMisalignedSizes = {1, 7, 1025, 4099};
// Any rank flattens: rank 0 is one element, an empty axis none.
const std::vector<std::vector<int64_t>> kOtherShapes = {{}, {3, 5, 7}, {2, 0, 3}};

constexpr float kAlpha = 2.5f;  // saxpy's alpha: alpha * x is exact for x = k / 64

struct ElementwiseOp {
  const char* target;
  int operands;        // same-shaped operands (after the dynamic alpha)
  bool dynamic_alpha;  // a 0-d float32 operand first (saxpy_dynamic)
  bool static_alpha;   // the float32 attribute "alpha" (saxpy)
  float (*reference)(const float* x);
};

const ElementwiseOp kElementwiseOps[] = {
    {"cutlax_vector_add_v1", 2, false, false, [](const float* x) { return x[0] + x[1]; }},
    {"cutlax_saxpy_v1", 2, false, true, [](const float* x) { return kAlpha * x[0] + x[1]; }},
    {"cutlax_saxpy_dynamic_v1", 2, true, false,
     [](const float* x) { return kAlpha * x[0] + x[1]; }},
    {"cutlax_relu_v1", 1, false, false,
     [](const float* x) { return x[0] > 0 || x[0] != x[0] ? x[0] : 0.0f; }},
    {"cutlax_relu_backward_v1", 2, false, false,
     [](const float* x) { return x[0] > 0 ? x[1] : 0.0f; }},
};

Case elementwise_case(const ElementwiseOp& op, XLA_FFI_DataType dtype,
                      const std::vector<int64_t>& dims, int64_t offset) {
  Case c;
  c.target = op.target;
  if (op.dynamic_alpha) c.args.push_back({F32, {}, offset, true, kAlpha});
  for (int i = 0; i < op.operands; ++i) c.args.push_back({dtype, dims, offset});
  c.rets.push_back({dtype, dims, offset});
  if (op.static_alpha) c.attrs.push_back({"alpha", F32, kAlpha});
  const bool dynamic = op.dynamic_alpha;
  auto reference = op.reference;
  c.check = [dtype, dynamic, reference](const std::vector<HostArray>& args,
                                        const std::vector<HostArray>& rets) {
    const size_t first = dynamic ? 1 : 0;
    std::vector<float> want(rets[0].values.size());
    for (size_t i = 0; i < want.size(); ++i) {
      float x[2] = {};
      for (size_t a = first; a < args.size(); ++a) x[a - first] = args[a].values[i];
      want[i] = round_to(dtype, reference(x));
    }
    return compare("out", rets[0].values, want);
  };
  return c;
}

void add_elementwise(std::vector<Case>& cases) {
  for (const ElementwiseOp& op : kElementwiseOps) {
    for (XLA_FFI_DataType dtype : kFloatTypes) {
      for (int64_t n : kFlatSizes) cases.push_back(elementwise_case(op, dtype, {n}, 0));
      for (int64_t n : kMisalignedSizes) cases.push_back(elementwise_case(op, dtype, {n}, 1));
      for (const auto& dims : kOtherShapes) cases.push_back(elementwise_case(op, dtype, dims, 0));
    }
    // Refusals: a result of another shape or dtype, and an operand dtype the
    // op does not take. Were one launched, it would read or write past the
    // smaller buffer.
    cases.push_back(refused(elementwise_case(op, F32, {1025}, 0), "has shape (1024,)",
                            [](Case& c) { c.rets[0].dims = {1024}; }));
    cases.push_back(refused(elementwise_case(op, F16, {257}, 0), "has dtype float32",
                            [](Case& c) { c.rets[0].dtype = F32; }));
    cases.push_back(
        refused(elementwise_case(op, F64, {31}, 0), "has dtype float64; expected one of"));
    if (op.operands == 2) {  // a second operand of another shape
      cases.push_back(refused(elementwise_case(op, F32, {1025}, 0), "has shape (1024,) but",
                              [](Case& c) { c.args.back().dims = {1024}; }));
    }
    if (op.dynamic_alpha) {  // alpha must be 0-d
      cases.push_back(refused(elementwise_case(op, F32, {7}, 0), "alpha must have rank 0",
                              [](Case& c) { c.args[0].dims = {1}; }));
    }
  }
}

// --- bias_relu --------------------------------------------------------------

Case bias_relu_case(XLA_FFI_DataType dtype, const std::vector<int64_t>& dims, int64_t x_offset,
                    int64_t bias_offset) {
  Case c;
  c.target = "cutlax_bias_relu_v1";
  const int64_t width = dims.back();
  c.args = {{dtype, dims, x_offset}, {dtype, {width}, bias_offset}};
  c.rets = {{dtype, dims, x_offset}};
  c.check = [dtype, width](const std::vector<HostArray>& args, const std::vector<HostArray>& rets) {
    const std::vector<float>&x = args[0].values, &bias = args[1].values;
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float z = x[i] + bias[i % width];
      want[i] = round_to(dtype, z < 0 ? 0.0f : z);
    }
    return compare("out", rets[0].values, want);
  };
  return c;
}

void add_bias_relu(std::vector<Case>& cases) {
  // Widths that are and are not multiples of the 16-byte run (4 or 8
  // elements: the vector bias load), runs that wrap into the next row,
  // rank 1 and 3, no rows, no columns.
  const std::vector<std::vector<int64_t>> shapes = {
      {1},       {7},       {4099},    {1, 1},   {3, 7},    {5, 8}, {9, 4}, {2, 3, 16},
      {33, 100}, {7, 1024}, {257, 17}, {64, 65}, {3, 1025}, {0, 8}, {5, 0}, {0, 0}};
  for (XLA_FFI_DataType dtype : kFloatTypes) {
    for (const auto& dims : shapes) cases.push_back(bias_relu_case(dtype, dims, 0, 0));
    cases.push_back(bias_relu_case(dtype, {33, 64}, 0, 1));  // bias misaligned: scalar bias
    cases.push_back(bias_relu_case(dtype, {9, 16}, 1, 0));   // x and out misaligned
    cases.push_back(bias_relu_case(dtype, {17, 24}, 1, 1));
  }
  cases.push_back(refused(bias_relu_case(F32, {4, 9}, 0, 0), "bias has shape (8,)",
                          [](Case& c) { c.args[1].dims = {8}; }));
  cases.push_back(refused(bias_relu_case(F16, {4, 8}, 0, 0), "bias must have rank 1", [](Case& c) {
    c.args[1].dims = {1, 8};
  }));
  cases.push_back(refused(bias_relu_case(F32, {1}, 0, 0), "x must have rank >= 1",
                          [](Case& c) { c.args[0].dims = c.rets[0].dims = {}; }));
}

// --- bias_relu_backward -----------------------------------------------------

Case bias_relu_backward_case(XLA_FFI_DataType dtype, const std::vector<int64_t>& dims,
                             int64_t chunks, int64_t offset) {
  Case c;
  c.target = "cutlax_bias_relu_backward_v1";
  const int64_t width = dims.back();
  c.args = {{dtype, dims, offset}, {dtype, dims, offset}};
  c.rets = {{dtype, dims, offset}, {dtype, {width}, offset}, {F32, {chunks, width}, offset}};
  c.check = [dtype, width](const std::vector<HostArray>& args, const std::vector<HostArray>& rets) {
    const std::vector<float>&y = args[0].values, &g = args[1].values;
    std::vector<float> dx(y.size()), dbias(size_t(width), 0.0f);
    for (size_t i = 0; i < y.size(); ++i) {
      dx[i] = y[i] > 0 ? g[i] : 0.0f;
      dbias[i % width] += dx[i];  // multiples of 1/64: exact in any order
    }
    for (float& d : dbias) d = round_to(dtype, d);
    std::string error = compare("dx", rets[0].values, dx);
    return error.empty() ? compare("dbias", rets[1].values, dbias) : error;
  };
  return c;
}

void add_bias_relu_backward(std::vector<Case>& cases) {
  // (shape, row chunks = partials' rows): one chunk, several, more chunks
  // than rows (empty chunks), widths off the run and the 32-thread column
  // block, no rows, no columns.
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> shapes = {
      {{1}, 1},          {{4099}, 1},    {{1, 1}, 1},     {{7, 3}, 2},     {{5, 16}, 8},
      {{64, 8}, 4},      {{100, 33}, 7}, {{33, 1024}, 3}, {{257, 40}, 16}, {{2, 3, 8}, 2},
      {{1000, 257}, 64}, {{0, 8}, 1},    {{6, 0}, 3},     {{3, 1025}, 2}};
  for (XLA_FFI_DataType dtype : kFloatTypes) {
    for (const auto& [dims, chunks] : shapes) {
      cases.push_back(bias_relu_backward_case(dtype, dims, chunks, 0));
    }
    cases.push_back(bias_relu_backward_case(dtype, {9, 16}, 2, 1));  // misaligned: scalar runs
    cases.push_back(bias_relu_backward_case(dtype, {40, 7}, 3, 1));
  }
  cases.push_back(refused(bias_relu_backward_case(F32, {4, 8}, 0, 0),
                          "partials must have at least one row chunk"));
  cases.push_back(
      refused(bias_relu_backward_case(F32, {4, 8}, 2, 0), "partials has shape (2, 9)", [](Case& c) {
        c.rets[2].dims = {2, 9};
      }));
  // The CUDA launcher's grid.y limit; the CPU twin takes the call.
  cases.push_back(refused(bias_relu_backward_case(F16, {3, 1}, 70000, 0),
                          "at most 65535 fit in one launch",
                          [](Case& c) { c.refusal_cuda_only = true; }));
}

// --- GEMMs ----------------------------------------------------------------

float gelu(float z) {  // jax.nn.gelu's tanh form, as the epilogue computes it
  const float k0 = 0.7978845608028654f, k1 = 0.044715f;
  return 0.5f * z * (1.0f + std::tanh(k0 * (z + k1 * z * z * z)));
}

// c = act(op(a) @ op(b) + bias) and the pre-activation z on the host, from
// the operands as stored for `transpose` (0 none, 1 b as (N, K), 2 a as
// (K, M)); the tolerance scales with the sum of |products| (accumulation
// order, TF32) and the result's rounding.
std::string check_gemm(const std::vector<HostArray>& args, const std::vector<HostArray>& rets,
                       int64_t transpose, int64_t activation, XLA_FFI_DataType dtype) {
  const std::vector<float>&a = args[0].values, &b = args[1].values;
  const bool has_bias = args.size() > 2;
  const int64_t m = rets[0].dims[0], n = rets[0].dims[1];
  const int64_t k = transpose == 2 ? args[0].dims[0] : args[0].dims[1];
  std::vector<float> c(size_t(m * n)), z(size_t(m * n)), tolerance(size_t(m * n));
  const float rtol = dtype == BF16 ? 1.0f / 64 : dtype == F16 ? 1.0f / 512 : 1e-4f;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = has_bias ? args[2].values[j] : 0.0, magnitude = std::fabs(sum);
      for (int64_t p = 0; p < k; ++p) {
        const float x = transpose == 2 ? a[p * m + i] : a[i * k + p];
        const float y = transpose == 1 ? b[j * k + p] : b[p * n + j];
        sum += double(x) * y;
        magnitude += std::fabs(double(x) * y);
      }
      const float pre = float(sum);
      const float act = activation == 1   ? (pre < 0 ? 0.0f : pre)
                        : activation == 2 ? gelu(pre)
                                          : pre;
      const size_t at = size_t(i * n + j);
      z[at] = round_to(dtype, pre);
      c[at] = round_to(dtype, act);
      // The accumulation (exact for these inputs, but the tensor cores' adder
      // is not specified) and the epilogue's tanh.approx (about 2^-11).
      tolerance[at] = 1e-4f * float(magnitude) + 1e-6f +
                      (activation == 2 ? 1e-3f * (1.0f + std::fabs(pre)) : 0.0f);
    }
  }
  std::string error = compare("c", rets[0].values, c, rtol, &tolerance);
  if (error.empty() && rets.size() > 1) error = compare("aux", rets[1].values, z, rtol, &tolerance);
  return error;
}

// gemm_tiled: c = a @ b in float32, any M, N, K.
Case gemm_tiled_case(int64_t m, int64_t n, int64_t k, int64_t offset = 0) {
  Case c;
  c.target = "cutlax_gemm_tiled_v1";
  c.args = {{F32, {m, k}, offset}, {F32, {k, n}, offset}};
  c.rets = {{F32, {m, n}, offset}};
  c.check = [](const std::vector<HostArray>& args, const std::vector<HostArray>& rets) {
    return check_gemm(args, rets, 0, 0, F32);
  };
  return c;
}

void add_gemm_tiled(std::vector<Case>& cases, bool reduced) {
  // The 128 x 128 x 8 tile: exact tiles, tails in M, N and K, K % 4 and N % 4
  // (the 128-bit loads) on and off, vectors, empty products (K = 0 writes
  // zeros), and a misaligned case that must take the scalar loads.
  const std::vector<std::vector<int64_t>> full = {
      {1, 1, 1},    {7, 9, 5},    {128, 128, 8}, {129, 131, 17}, {200, 260, 36}, {256, 256, 64},
      {33, 1, 300}, {1, 300, 33}, {0, 5, 3},     {5, 0, 3},      {6, 7, 0}};
  const std::vector<std::vector<int64_t>> few = {{129, 131, 17}, {200, 260, 36}, {6, 7, 0}};
  for (const auto& s : reduced ? few : full) cases.push_back(gemm_tiled_case(s[0], s[1], s[2]));
  if (!reduced) cases.push_back(gemm_tiled_case(64, 64, 8, 1));
  cases.push_back(refused(gemm_tiled_case(4, 5, 6), "b has shape (7, 5)", [](Case& c) {
    c.args[1].dims = {7, 5};
  }));
}

Case gemm_case(XLA_FFI_DataType dtype, int64_t transpose, int64_t config, int64_t m, int64_t n,
               int64_t k, int64_t activation, bool aux) {
  Case c;
  c.target = aux ? "cutlax_gemm_aux_v1" : "cutlax_gemm_v1";
  c.sm90 = true;
  c.args = {{dtype, transpose == 2 ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}},
            {dtype, transpose == 1 ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}},
            {dtype, {n}}};
  c.rets = {{dtype, {m, n}}};
  if (aux) c.rets.push_back({dtype, {m, n}});
  c.attrs = {{"activation", S64, double(activation)},
             {"config", S64, double(config)},
             {"transpose", S64, double(transpose)}};
  c.check = [=](const std::vector<HostArray>& args, const std::vector<HostArray>& rets) {
    return check_gemm(args, rets, transpose, activation, dtype);
  };
  return c;
}

void add_gemm_sm90(std::vector<Case>& cases, bool reduced) {
  // Every SM90 kernel that is built (src/ops/gemm_kernels.def).
  for (const cutlax::ops::GemmKernel& kernel : cutlax::ops::kGemmKernels) {
    const auto dtype = static_cast<XLA_FFI_DataType>(kernel.dtype);
    const auto transpose = static_cast<int64_t>(kernel.transpose);
    // TMA moves 16-byte rows: every array's last dimension is a multiple of
    // `row` elements; the K tile is 128 bytes.
    const int64_t row = int64_t(16 / byte_width(dtype)), k_tile = 8 * row;
    const bool a_t = kernel.transpose == cutlax::ops::GemmTranspose::kA;  // M is a's row
    auto add = [&](int64_t m, int64_t n, int64_t k, int64_t activation, bool aux) {
      cases.push_back(gemm_case(dtype, transpose, static_cast<int64_t>(kernel.config), m, n, k,
                                activation, aux));
    };
    // Tails in M, N and K (one row of 16 bytes past the 128 tile and the K tile).
    const int64_t tail_m = a_t ? 128 + row : 129, tail_n = 128 + row, tail_k = k_tile + row;
    add(tail_m, tail_n, tail_k, 1, false);
    add(tail_m, tail_n, tail_k, 2, true);
    if (reduced) continue;
    add(tail_m, tail_n, tail_k, 0, false);
    add(tail_m, tail_n, tail_k, 2, false);
    add(tail_m, tail_n, tail_k, 0, true);
    add(a_t ? row : 1, row, row, 1, true);  // the smallest problem
    add(128, 256, 2 * k_tile, 2, false);    // whole tiles of both configurations
    add(200, 256 + row, 512, 2, true);      // a longer K, the last N tile one row wide
  }
  // config 0 (auto: the heuristic), and M = 0 (nothing to launch).
  cases.push_back(gemm_case(BF16, 0, 0, 129, 136, 72, 1, false));
  cases.push_back(gemm_case(F16, 1, 0, 129, 136, 72, 2, true));
  cases.push_back(gemm_case(F32, 1, 0, 1, 4, 4, 0, false));
  cases.push_back(gemm_case(BF16, 0, 2, 0, 8, 8, 0, false));
  // Refusals, each before any launch.
  cases.push_back(refused(gemm_case(F16, 0, 2, 8, 8, 0, 0, false), "must have K > 0"));
  cases.push_back(
      refused(gemm_case(BF16, 0, 2, 8, 12, 8, 0, false), "rows that are multiples of 16 bytes"));
  cases.push_back(
      refused(gemm_case(F32, 2, 0, 8, 8, 8, 0, false), "transpose must be one of b for float32"));
  cases.push_back(refused(gemm_case(F16, 1, 1, 8, 8, 8, 0, true), "config must be auto or"));
  cases.push_back(refused(gemm_case(BF16, 0, 2, 8, 8, 8, 3, false), "activation must be 0"));
  cases.push_back(refused(gemm_case(BF16, 3, 2, 8, 8, 8, 0, false), "transpose must be 0"));
  cases.push_back(refused(gemm_case(BF16, 0, 2, 8, 16, 8, 0, false), "bias has shape (8,)",
                          [](Case& c) { c.args[2].dims = {8}; }));
}

std::vector<Case> all_cases(bool reduced) {
  std::vector<Case> cases;
  add_elementwise(cases);
  add_bias_relu(cases);
  add_bias_relu_backward(cases);
  add_gemm_tiled(cases, reduced);
  add_gemm_sm90(cases, reduced);
  return cases;
}

// ---------------------------------------------------------------------------
// Running a case on the GPU.

// Pseudo-random multiples of 1/64 in [-2, 2]: exact in bf16, f16 and float,
// and their sums and products exact in float, so host results are exact.
std::vector<float> fill(const ArraySpec& spec, uint64_t seed) {
  std::vector<float> values(size_t(spec.count()), spec.value);
  if (spec.constant) return values;
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& v : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = float(int64_t((state >> 33) % 257) - 128) / 64.0f;
  }
  return values;
}

// Where a case runs: on the GPU through the CUDA handler, or (--cpu, for
// checking this driver on a machine without a GPU) through the CPU twin on
// host memory, with the same buffers, checks and refusals.
struct Backend {
  bool cuda = true;
  cudaStream_t stream = nullptr;
  const char* platform() const { return cuda ? "CUDA" : "cpu"; }
};

std::string cuda_failure(cudaError_t status, const std::string& what) {
  return what + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

// Errors that leave the CUDA context unusable: no later case can run.
bool is_sticky(cudaError_t status) {
  return status == cudaErrorIllegalAddress || status == cudaErrorLaunchFailure ||
         status == cudaErrorIllegalInstruction || status == cudaErrorMisalignedAddress ||
         status == cudaErrorInvalidAddressSpace || status == cudaErrorInvalidPc ||
         status == cudaErrorHardwareStackError || status == cudaErrorAssert ||
         status == cudaErrorLaunchTimeout || status == cudaErrorUnknown;
}

// One operand or result, as the call frame points at it.
struct Array {
  ArraySpec spec;
  bool cuda = true;
  void* base = nullptr;  // the allocation (null for no elements)
  XLA_FFI_Buffer raw{};
  std::vector<float> host;  // an operand's values

  Array() = default;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  ~Array() {
    if (base && cuda) cudaFree(base);
    if (base && !cuda) std::free(base);
  }
  size_t bytes() const { return size_t(spec.count()) * byte_width(spec.dtype); }
  char* data() const {
    return base ? static_cast<char*>(base) + spec.offset * byte_width(spec.dtype) : nullptr;
  }
};

struct Outcome {
  bool passed = false;
  bool context_lost = false;  // a sticky CUDA error
  std::string message;
};

Outcome run_case(const Case& c, const cutlax_handler_entry& entry, size_t index,
                 const Backend& backend) {
  Outcome outcome;
  auto fail = [&](cudaError_t status, const std::string& what) {
    outcome.context_lost = is_sticky(status);
    outcome.message = cuda_failure(status, what);
  };
  // Exactly the elements (plus the misaligning offset), so an access past the
  // end is outside the allocation; operands filled, results left as they come.
  auto make = [&](const ArraySpec& spec, uint64_t seed, bool operand) {
    auto array = std::make_unique<Array>();
    array->spec = spec;
    array->cuda = backend.cuda;
    const size_t allocated = array->bytes() + size_t(spec.offset) * byte_width(spec.dtype);
    if (spec.count() > 0 && outcome.message.empty()) {
      if (!backend.cuda) {
        array->base = std::malloc(allocated);
      } else if (const cudaError_t status = cudaMalloc(&array->base, allocated); status) {
        fail(status, "cudaMalloc(" + std::to_string(allocated) + ")");
      }
    }
    // The SM90 GEMMs store their results with TMA, which initcheck does not
    // count as initialising memory: the H200's first run reported every
    // element of every such result read back, though each matched the host
    // reference. Those results start as all-ones bytes (a NaN in every
    // float type) instead, so initcheck judges only their kernels' reads and
    // an element the kernel left unwritten fails the host comparison.
    if (!operand && c.sm90 && backend.cuda && array->data() && outcome.message.empty()) {
      if (const cudaError_t status = cudaMemset(array->data(), 0xff, array->bytes()); status) {
        fail(status, "cudaMemset (result)");
      }
    }
    if (operand && array->data() && outcome.message.empty()) {
      array->host = fill(spec, seed);
      const std::vector<char> bytes = encode(spec.dtype, array->host);
      if (!backend.cuda) {
        std::memcpy(array->data(), bytes.data(), bytes.size());
      } else if (const cudaError_t status =
                     cudaMemcpy(array->data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
                 status) {
        fail(status, "cudaMemcpy (operand)");
      }
    }
    array->raw = {XLA_FFI_Buffer_STRUCT_SIZE,
                  nullptr,
                  spec.dtype,
                  array->data(),
                  int64_t(array->spec.dims.size()),
                  array->spec.dims.data()};
    return array;
  };
  std::vector<std::unique_ptr<Array>> args, rets;
  for (size_t i = 0; i < c.args.size(); ++i) args.push_back(make(c.args[i], index * 8 + i, true));
  for (const ArraySpec& spec : c.rets) rets.push_back(make(spec, 0, false));
  // A pageable cudaMemcpy may return before its DMA lands, and the legacy
  // stream it runs on does not order the non-blocking stream the kernel uses.
  if (backend.cuda && outcome.message.empty()) {
    if (const cudaError_t status = cudaDeviceSynchronize(); status) {
      fail(status, "cudaDeviceSynchronize before the handler");
    }
  }
  if (!outcome.message.empty()) return outcome;

  FakeCall call;
  for (auto& a : args) call.arg(&a->raw);
  for (auto& r : rets) call.ret(&r->raw);
  for (const AttrSpec& a : c.attrs) {
    if (a.dtype == F32) {
      call.scalar_attr(a.name, XLA_FFI_DataType_F32, float(a.value));
    } else {
      call.scalar_attr(a.name, XLA_FFI_DataType_S64, int64_t(a.value));
    }
  }
  FakeExecutionContext context{backend.stream, nullptr};  // CPU twins run inline
  const CallOutcome called = call.call(entry.handler, context);
  if (backend.cuda) {
    if (const cudaError_t status = cudaStreamSynchronize(backend.stream); status) {
      fail(status, "cudaStreamSynchronize after the handler");
      if (!called.ok) outcome.message += "; the handler said: " + called.message;
      return outcome;
    }
  }
  const bool refused_here = !c.refusal.empty() && (backend.cuda || !c.refusal_cuda_only);
  if (refused_here) {
    if (called.ok) {
      outcome.message = "the handler accepted a call it must refuse (expected '" + c.refusal + "')";
    } else if (called.message.find(c.refusal) == std::string::npos) {
      outcome.message = "refused with '" + called.message + "', expected '" + c.refusal + "'";
    } else {
      outcome.passed = true;
    }
    return outcome;
  }
  if (!called.ok) {
    outcome.message = "the handler failed (XLA_FFI_Error_Code " + std::to_string(called.code) +
                      "): " + called.message;
    return outcome;
  }
  // Every result back whole: initcheck reports a copy of bytes the kernel
  // never wrote.
  std::vector<HostArray> host_args, host_rets;
  for (auto& a : args) host_args.push_back({a->spec.dims, a->host});
  for (auto& r : rets) {
    std::vector<char> bytes(r->bytes());
    if (bytes.empty()) {
    } else if (!backend.cuda) {
      std::memcpy(bytes.data(), r->data(), bytes.size());
    } else if (const cudaError_t status =
                   cudaMemcpy(bytes.data(), r->data(), bytes.size(), cudaMemcpyDeviceToHost);
               status) {
      fail(status, "cudaMemcpy (result)");
      return outcome;
    }
    host_rets.push_back({r->spec.dims, decode(r->spec.dtype, bytes)});
  }
  outcome.message = c.check ? c.check(host_args, host_rets) : "";
  outcome.passed = outcome.message.empty();
  return outcome;
}

// ---------------------------------------------------------------------------
// The table, and the cases against it.

struct Options {
  const char* extension = nullptr;
  bool list = false, cpu = false, reduced = false, quiet = false, default_stream = false;
  std::string filter;
};

bool parse(int argc, char** argv, Options& options) {
  if (argc < 2) return false;
  options.extension = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      options.list = true;
    } else if (arg == "--cpu") {
      options.cpu = true;
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--default-stream") {
      options.default_stream = true;
    } else if (arg == "--cases" && i + 1 < argc) {
      const std::string set = argv[++i];
      if (set != "full" && set != "reduced") return false;
      options.reduced = set == "reduced";
    } else if (arg == "--filter" && i + 1 < argc) {
      options.filter = argv[++i];
    } else {
      std::fprintf(stderr, "sanitize_driver: unknown argument '%s'\n", arg.c_str());
      return false;
    }
  }
  return true;
}

// The cases and the table agree: each target with cases is in the table with
// the expected signature types, and (unless filtered) each target in the table
// has cases. Returns the number of problems, each printed.
int check_against_table(const cutlax_handler_table& table, const std::vector<Case>& cases,
                        bool filtered) {
  int problems = 0;
  std::set<std::string> with_cases;
  for (const Case& c : cases) with_cases.insert(c.target);
  for (const std::string& target : with_cases) {
    const cutlax_handler_entry* entry = cutlax::testing::find_handler(table, target, nullptr);
    if (!entry) {
      std::printf("PROBLEM: %s has cases but is not in the extension's table\n", target.c_str());
      ++problems;
      continue;
    }
    const auto expected = expected_types().find(target);
    if (expected == expected_types().end() || expected->second != entry->types) {
      std::printf(
          "PROBLEM: %s's signature types changed; update its cases in "
          "tests/gpu/sanitize_driver.cpp\n  table: %s\n  cases: %s\n",
          target.c_str(), entry->types,
          expected == expected_types().end() ? "(none)" : expected->second.c_str());
      ++problems;
    }
  }
  if (!filtered) {
    for (size_t i = 0; i < table.size; ++i) {
      const std::string target = table.entries[i].target;
      if (!with_cases.count(target)) {
        std::printf("PROBLEM: %s (%s) has no cases: add them to tests/gpu/sanitize_driver.cpp\n",
                    target.c_str(), table.entries[i].platform);
        with_cases.insert(target);  // once per target
        ++problems;
      }
    }
  }
  return problems;
}

struct TargetTally {
  int cases = 0, refusals = 0, failed = 0;
};

int run(const Options& options) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines in order with the sanitizer's reports
  // RTLD_NOW: an unresolved symbol is an error here, not a crash mid-run.
  void* library = dlopen(options.extension, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::printf("sanitize_driver: cannot load %s: %s\n", options.extension, dlerror());
    return 1;
  }
  using TableFn = const cutlax_handler_table* (*)();
  auto table_fn = reinterpret_cast<TableFn>(dlsym(library, "cutlax_library_handlers"));
  if (!table_fn) {
    std::printf("sanitize_driver: %s has no cutlax_library_handlers\n", options.extension);
    return 1;
  }
  const cutlax_handler_table& table = *table_fn();
  if (table.abi_version != CUTLAX_LIBRARY_ABI_VERSION) {
    std::printf("sanitize_driver: table ABI %d, this driver was built for %d\n", table.abi_version,
                CUTLAX_LIBRARY_ABI_VERSION);
    return 1;
  }
  if (table.xla_ffi_api_major != XLA_FFI_API_MAJOR ||
      table.xla_ffi_api_minor != XLA_FFI_API_MINOR) {
    // The call frame is versioned by struct sizes; say so in case a call
    // fails to bind.
    std::printf("note: the extension was built with XLA FFI API %d.%d, this driver with %d.%d\n",
                table.xla_ffi_api_major, table.xla_ffi_api_minor, XLA_FFI_API_MAJOR,
                XLA_FFI_API_MINOR);
  }

  std::vector<Case> cases;
  for (Case& c : all_cases(options.reduced)) {
    if (options.filter.empty() || describe(c).find(options.filter) != std::string::npos) {
      cases.push_back(std::move(c));
    }
  }
  int problems = check_against_table(table, cases, !options.filter.empty());
  std::map<std::string, TargetTally> tally;
  for (const Case& c : cases) {
    ++tally[c.target].cases;
    tally[c.target].refusals += !c.refusal.empty();
  }

  if (options.list) {
    for (size_t i = 0; i < cases.size(); ++i) {
      std::printf("[%4zu] %s\n", i + 1, describe(cases[i]).c_str());
    }
    for (const auto& [target, t] : tally) {
      std::printf("%s: %d cases (%d refusals)\n", target.c_str(), t.cases, t.refusals);
    }
    std::printf("sanitize_driver: %zu cases listed (%s set), %d problems with the table\n",
                cases.size(), options.reduced ? "reduced" : "full", problems);
    return problems ? 1 : 0;
  }

  Backend backend;
  backend.cuda = !options.cpu;
  bool hopper = false;
  if (backend.cuda) {
    size_t cuda_entries = 0;
    for (size_t i = 0; i < table.size; ++i) {
      cuda_entries += std::strcmp(table.entries[i].platform, "CUDA") == 0;
    }
    if (cuda_entries == 0) {
      std::printf("sanitize_driver: %s has no CUDA handlers (built without nvcc?)\n",
                  options.extension);
      return 1;
    }
    cudaDeviceProp device{};
    if (const cudaError_t status = cudaGetDeviceProperties(&device, 0); status) {
      std::printf("sanitize_driver: %s\n", cuda_failure(status, "cudaGetDeviceProperties").c_str());
      return 1;
    }
    std::printf("device 0: %s, sm_%d%d\n", device.name, device.major, device.minor);
    hopper = device.major == 9 && device.minor == 0;
    if (!hopper) std::printf("note: not sm_90: the SM90 GEMM cases must be refused\n");
    if (!options.default_stream) {  // XLA launches on a stream of its own, never the null one
      if (const cudaError_t status =
              cudaStreamCreateWithFlags(&backend.stream, cudaStreamNonBlocking);
          status) {
        std::printf("sanitize_driver: %s\n", cuda_failure(status, "cudaStreamCreate").c_str());
        return 1;
      }
    }
  } else {
    std::printf("note: --cpu: the CPU twins run the cases; this checks the driver, not a kernel\n");
  }

  // Cases that launch: accepted calls with a result to write (an empty one
  // returns before any launch).
  size_t ran = 0, failed = 0, launching = 0;
  bool stopped = false;
  for (size_t i = 0; i < cases.size(); ++i) {
    Case c = cases[i];
    if (backend.cuda && c.sm90 && !hopper && c.refusal.empty() && c.rets[0].count() > 0) {
      c.refusal = "built for Hopper";
      c.check = nullptr;
    }
    const std::string text = describe(c);
    if (!options.quiet) std::printf("[%4zu/%zu] %s\n", i + 1, cases.size(), text.c_str());
    const cutlax_handler_entry* entry =
        cutlax::testing::find_handler(table, c.target, backend.platform());
    Outcome outcome;
    if (!entry) {
      outcome.message = "no " + std::string(backend.platform()) + " handler in the table";
    } else {
      outcome = run_case(c, *entry, i, backend);
    }
    ++ran;
    launching += c.refusal.empty() && std::any_of(c.rets.begin(), c.rets.end(),
                                                  [](const auto& r) { return r.count() > 0; });
    if (!outcome.passed) {
      ++failed;
      ++tally[c.target].failed;
      if (options.quiet) std::printf("[%4zu/%zu] %s\n", i + 1, cases.size(), text.c_str());
      std::printf("  FAILED: %s\n", outcome.message.c_str());
    }
    if (outcome.context_lost) {
      std::printf("sanitize_driver: the CUDA context is broken after case %zu; stopping\n", i + 1);
      stopped = true;
      break;
    }
  }
  if (backend.stream && !stopped) cudaStreamDestroy(backend.stream);

  for (const auto& [target, t] : tally) {
    std::printf("%s: %d cases (%d refusals), %d failed\n", target.c_str(), t.cases, t.refusals,
                t.failed);
  }
  std::printf(
      "sanitize_driver: %zu of %zu cases run (%s set, %zu launching kernels), %zu failed, "
      "%d problems with the table%s\n",
      ran, cases.size(), options.reduced ? "reduced" : "full", launching, failed, problems,
      stopped ? "; STOPPED EARLY" : "");
  std::fflush(stdout);
  return failed || problems || stopped ? 1 : 0;
}

}  // namespace

// The entry point run_driver.py calls: argv[1] is the extension's path.
extern "C" __attribute__((visibility("default"))) int cutlax_sanitize_main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: run_driver.py DRIVER.so EXTENSION.so [--list | --cpu] "
                 "[--cases full|reduced] [--filter TEXT] [--quiet] [--default-stream]\n");
    return 2;
  }
  return run(options);
}
