// cutlax.jit's runtime without a GPU: the launch-program evaluator (every
// opcode, every error), the artifact format (round trip and every way a blob
// can be damaged), the host-built kernel parameters, the hash, the kernel
// signature read from a lowered name, and, when NVRTC loads, real compiles to
// sm_90a through the compile cache and in a child process (NVRTC's crash).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<cuda.h>)
#include <cuda.h>
#endif

#include "jit/artifact.hpp"
#include "jit/cache.hpp"
#include "jit/child_compile.hpp"
#include "jit/compiler.hpp"
#include "jit/driver.hpp"
#include "jit/hash.hpp"
#include "jit/launch_program.hpp"
#include "jit/nvrtc.hpp"
#include "jit/pch.hpp"
#include "jit/signature.hpp"
#include "jit/tensor_param.hpp"
#include "jit/tma.hpp"

namespace cutlax::jit {
namespace {

using Words = std::vector<int64_t>;
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Operand 0 has shape (6, 1000), operand 1 is 0-d, operand 2 has shape (7,).
struct Operands {
  std::vector<int64_t> a = {6, 1000}, c = {7};
  std::vector<OperandShape> shapes = {{a.data(), 2}, {nullptr, 0}, {c.data(), 1}};
};

// An expression of one token, `0 v`: two words.
Words constant(int64_t v) { return {2, kPushConstant, v}; }

// A program whose grid.x is `expr` (an expression: its length, then its
// words) and every other size 1.
Words grid_x(const Words& expr) {
  Words program = expr;
  for (int i = 0; i < 5; ++i) {
    Words one = constant(1);
    program.insert(program.end(), one.begin(), one.end());
  }
  return program;
}

Words expression(const Words& tokens) {
  Words out = {static_cast<int64_t>(tokens.size())};
  out.insert(out.end(), tokens.begin(), tokens.end());
  return out;
}

LaunchEvaluation evaluate(const Words& program) {
  static Operands operands;
  return evaluate_launch_program(program.data(), program.size(), operands.shapes.data(),
                                 operands.shapes.size());
}

// grid.x for `tokens`, or the error.
int64_t grid_x_of(const Words& tokens) {
  LaunchEvaluation e = evaluate(grid_x(expression(tokens)));
  EXPECT_TRUE(e.ok()) << e.error;
  return e.geometry.grid[0];
}

std::string error_of(const Words& program) {
  LaunchEvaluation e = evaluate(program);
  EXPECT_FALSE(e.ok());
  return e.error;
}

std::string grid_x_error(const Words& tokens) { return error_of(grid_x(expression(tokens))); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LaunchProgram, EvaluatesEveryOpcode) {
  EXPECT_EQ(grid_x_of({kPushConstant, 42}), 42);
  EXPECT_EQ(grid_x_of({kPushDimension, 0, 1}), 1000);
  EXPECT_EQ(grid_x_of({kPushDimension, 2, 0}), 7);
  EXPECT_EQ(grid_x_of({kPushSize, 0}), 6000);
  EXPECT_EQ(grid_x_of({kPushSize, 1}), 1);  // a 0-d array has one element
  EXPECT_EQ(grid_x_of({kPushConstant, 5, kPushConstant, 3, kAdd}), 8);
  EXPECT_EQ(grid_x_of({kPushConstant, 5, kPushConstant, 3, kSub}), 2);
  EXPECT_EQ(grid_x_of({kPushConstant, 5, kPushConstant, 3, kMul}), 15);
  EXPECT_EQ(grid_x_of({kPushConstant, 7, kPushConstant, 2, kFloorDiv}), 3);
  EXPECT_EQ(grid_x_of({kPushConstant, 7, kPushConstant, 2, kCeilDiv}), 4);
  EXPECT_EQ(grid_x_of({kPushConstant, 8, kPushConstant, 2, kCeilDiv}), 4);
  EXPECT_EQ(grid_x_of({kPushConstant, 5, kPushConstant, 3, kMin}), 3);
  EXPECT_EQ(grid_x_of({kPushConstant, 5, kPushConstant, 3, kMax}), 5);
  // cdiv(x0.size, 256), as Python records it for grid=lambda x: cdiv(x.size, 256).
  EXPECT_EQ(grid_x_of({kPushSize, 0, kPushConstant, 256, kCeilDiv}), 24);
}

TEST(LaunchProgram, DividesAsPython) {
  // Python: -7 // 2 == -4, 7 // -2 == -4, -7 // -2 == 3; -(-a // b) for cdiv.
  // 100 is added so the (possibly negative) quotient makes a valid grid size.
  auto eval = [](int64_t a, int64_t b, int64_t op) {
    return grid_x_of({kPushConstant, a, kPushConstant, b, op, kPushConstant, 100, kAdd}) - 100;
  };
  EXPECT_EQ(eval(-7, 2, kFloorDiv), -4);
  EXPECT_EQ(eval(7, -2, kFloorDiv), -4);
  EXPECT_EQ(eval(-7, -2, kFloorDiv), 3);
  EXPECT_EQ(eval(-8, 2, kFloorDiv), -4);
  EXPECT_EQ(eval(-7, 2, kCeilDiv), -3);
  EXPECT_EQ(eval(7, -2, kCeilDiv), -3);
  EXPECT_EQ(eval(0, 5, kCeilDiv), 0);
}

TEST(LaunchProgram, ReadsAllSixExpressionsInOrder) {
  Words program;
  for (int64_t v : {3, 4, 5, 32, 8, 2}) {
    Words e = constant(v);
    program.insert(program.end(), e.begin(), e.end());
  }
  LaunchEvaluation e = evaluate(program);
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.geometry.grid, (std::array<int64_t, 3>{3, 4, 5}));
  EXPECT_EQ(e.geometry.block, (std::array<int64_t, 3>{32, 8, 2}));
  EXPECT_FALSE(e.geometry.empty());
}

TEST(LaunchProgram, AZeroGridIsAnEmptyLaunch) {
  LaunchEvaluation e = evaluate(grid_x(constant(0)));
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_TRUE(e.geometry.empty());
}

TEST(LaunchProgram, RejectsArithmeticErrors) {
  EXPECT_TRUE(contains(grid_x_error({kPushConstant, 1, kPushConstant, 0, kFloorDiv}),
                       "grid.x: division by zero"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, 1, kPushConstant, 0, kCeilDiv}), "division by zero"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, kInt64Max, kPushConstant, 1, kAdd}), "overflow"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, kInt64Min, kPushConstant, 1, kSub}), "overflow"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, kInt64Max, kPushConstant, 2, kMul}), "overflow"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, kInt64Min, kPushConstant, -1, kFloorDiv}), "overflow"));
  EXPECT_TRUE(
      contains(grid_x_error({kPushConstant, kInt64Min, kPushConstant, 2, kCeilDiv}), "overflow"));
}

TEST(LaunchProgram, RejectsAnOverflowingElementCount) {
  std::vector<int64_t> huge = {int64_t{1} << 40, int64_t{1} << 40};
  OperandShape shape{huge.data(), 2};
  Words program = grid_x(expression({kPushSize, 0}));
  LaunchEvaluation e = evaluate_launch_program(program.data(), program.size(), &shape, 1);
  EXPECT_TRUE(contains(e.error, "overflow in the size of operand 0")) << e.error;
}

TEST(LaunchProgram, RejectsMalformedPrograms) {
  EXPECT_TRUE(contains(grid_x_error({99}), "grid.x: unknown opcode 99"));
  EXPECT_TRUE(contains(grid_x_error({-1}), "unknown opcode -1"));
  EXPECT_TRUE(contains(grid_x_error({kAdd}), "stack underflow"));
  EXPECT_TRUE(contains(grid_x_error({kPushConstant, 1, kMul}), "stack underflow"));
  EXPECT_TRUE(contains(grid_x_error({kPushConstant, 1, kPushConstant, 2}), "1 values left over"));
  EXPECT_TRUE(contains(grid_x_error({}), "the expression is empty"));
  Words deep;
  for (int i = 0; i < 65; ++i) deep.insert(deep.end(), {kPushConstant, 1});
  EXPECT_TRUE(contains(grid_x_error(deep), "stack overflow"));
  // Operands and axes out of range, negative ones included.
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, 3, 0}), "operand 3 is out of range"));
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, -1, 0}), "operand -1 is out of range"));
  EXPECT_TRUE(contains(grid_x_error({kPushSize, 5}), "operand 5 is out of range"));
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, 0, 2}), "axis 2 of operand 0"));
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, 0, -1}), "axis -1 of operand 0"));
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, 1, 0}), "(it has rank 0)"));
}

TEST(LaunchProgram, RejectsTruncatedPrograms) {
  // A token cut short inside its expression.
  EXPECT_TRUE(contains(grid_x_error({kPushConstant}), "truncated program"));
  EXPECT_TRUE(contains(grid_x_error({kPushDimension, 0}), "truncated program"));
  EXPECT_TRUE(contains(grid_x_error({kPushSize}), "truncated program"));
  // An expression longer than what is left, or missing altogether.
  Words program = grid_x(constant(1));
  program.pop_back();
  EXPECT_TRUE(contains(error_of(program), "block.z: truncated program"));
  program = grid_x(constant(1));
  program.resize(program.size() - 3);
  EXPECT_TRUE(contains(error_of(program), "block.z: truncated program: the expression is missing"));
  EXPECT_TRUE(contains(error_of({}), "grid.x: truncated program"));
  EXPECT_TRUE(contains(error_of({-2}), "grid.x: truncated program"));
  // A seventh expression cut short, and words after the ninth.
  program = grid_x(constant(1));
  program.push_back(0);
  EXPECT_TRUE(contains(error_of(program), "cluster.x: the expression is empty"));
  program = grid_x(constant(1));
  for (int i = 0; i < 3; ++i) {
    Words one = constant(1);
    program.insert(program.end(), one.begin(), one.end());
  }
  program.push_back(0);
  EXPECT_TRUE(contains(error_of(program), "1 words follow the nine launch expressions"));
}

Words geometry(int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz) {
  Words program;
  for (int64_t v : {gx, gy, gz, bx, by, bz}) {
    Words e = constant(v);
    program.insert(program.end(), e.begin(), e.end());
  }
  return program;
}

TEST(LaunchProgram, RejectsSizesCudaCannotLaunch) {
  const int64_t max_x = (int64_t{1} << 31) - 1;
  EXPECT_TRUE(evaluate(geometry(max_x, 65535, 65535, 1024, 1, 1)).ok());
  EXPECT_TRUE(evaluate(geometry(1, 1, 1, 16, 4, 16)).ok());
  EXPECT_TRUE(contains(error_of(geometry(max_x + 1, 1, 1, 1, 1, 1)), "grid.x is 2147483648"));
  EXPECT_TRUE(contains(error_of(geometry(1, 65536, 1, 1, 1, 1)), "grid.y is 65536"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 65536, 1, 1, 1)), "grid.z is 65536"));
  EXPECT_TRUE(contains(error_of(geometry(-1, 1, 1, 1, 1, 1)), "grid.x is -1"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 1, 0, 1, 1)), "block.x is 0"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 1, 1, -3, 1)), "block.y is -3"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 1, 1025, 1, 1)), "block.x is 1025"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 1, 1, 1, 65)), "block.z is 65"));
  EXPECT_TRUE(contains(error_of(geometry(1, 1, 1, 64, 32, 1)), "the block has 2048 threads"));
}

// A program of six or nine constant expressions.
Words constants(std::initializer_list<int64_t> values) {
  Words program;
  for (int64_t v : values) {
    Words e = constant(v);
    program.insert(program.end(), e.begin(), e.end());
  }
  return program;
}

TEST(LaunchProgram, ReadsTheCluster) {
  LaunchEvaluation e = evaluate(constants({4, 6, 1, 384, 1, 1, 2, 3, 1}));
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.geometry.cluster, (std::array<int64_t, 3>{2, 3, 1}));
  EXPECT_TRUE(e.geometry.clustered());
  // Programs of six expressions (artifacts made before clusters) launch without one.
  e = evaluate(constants({4, 6, 1, 384, 1, 1}));
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.geometry.cluster, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_FALSE(e.geometry.clustered());
}

TEST(LaunchProgram, RejectsClustersCudaCannotLaunch) {
  EXPECT_TRUE(contains(error_of(constants({4, 1, 1, 32, 1, 1, 0, 1, 1})), "cluster.x is 0"));
  EXPECT_TRUE(contains(error_of(constants({16, 1, 1, 32, 1, 1, 16, 1, 1})), "cluster.x is 16"));
  EXPECT_TRUE(
      contains(error_of(constants({9, 9, 1, 32, 1, 1, 3, 3, 1})), "the cluster has 9 blocks"));
  EXPECT_TRUE(contains(error_of(constants({5, 1, 1, 32, 1, 1, 2, 1, 1})),
                       "grid.x is 5, not a multiple of cluster.x (2)"));
  EXPECT_TRUE(contains(error_of(constants({4, 3, 1, 32, 1, 1, 1, 2, 1})),
                       "grid.y is 3, not a multiple of cluster.y (2)"));
}

TEST(LaunchProgram, ReadsTheMultiprocessorCount) {
  static Operands operands;
  const Words program = grid_x(expression({kPushMultiprocessorCount, kPushConstant, 2, kMul}));
  LaunchEvaluation e =
      evaluate_launch_program(program.data(), program.size(), operands.shapes.data(),
                              operands.shapes.size(), LaunchDevice{132});
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.geometry.grid[0], 264);
  EXPECT_TRUE(contains(error_of(program), "grid.x: the GPU's multiprocessor count is unknown"));
}

// driver.hpp declares the few cuda.h structs the launch passes by pointer;
// where the CUDA headers are on the include path, the layouts must match.
#if __has_include(<cuda.h>)
static_assert(sizeof(cu::LaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(offsetof(cu::LaunchAttribute, value) == offsetof(CUlaunchAttribute, value));
static_assert(sizeof(cu::LaunchConfig) == sizeof(CUlaunchConfig));
static_assert(offsetof(cu::LaunchConfig, shared_bytes) == offsetof(CUlaunchConfig, sharedMemBytes));
static_assert(offsetof(cu::LaunchConfig, stream) == offsetof(CUlaunchConfig, hStream));
static_assert(offsetof(cu::LaunchConfig, attributes) == offsetof(CUlaunchConfig, attrs));
static_assert(offsetof(cu::LaunchConfig, attribute_count) == offsetof(CUlaunchConfig, numAttrs));
static_assert(sizeof(cu::TensorMap) == sizeof(CUtensorMap));
static_assert(cu::kLaunchAttributeClusterDimension == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
static_assert(cu::kDeviceMultiprocessorCount == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
#endif

TEST(Driver, LaunchStructsMatchCudaH) {
#if !__has_include(<cuda.h>)
  GTEST_SKIP() << "no cuda.h on the include path";
#endif
  cu::LaunchAttribute cluster{};
  cluster.value.cluster_dim = {2, 1, 1};
  EXPECT_EQ(sizeof(cluster), 72u);  // id, padding, a 64-byte union
  EXPECT_EQ(sizeof(cu::LaunchConfig), 56u);
  EXPECT_EQ(alignof(cu::TensorMap), 64u);
}

// One TMA record: array, swizzle, interleave, l2 promotion, oob fill, rank, box.
Words tma_record(int64_t operand, std::vector<int64_t> box, int64_t swizzle = 0) {
  Words record = {operand, swizzle, 0, 128, 0, static_cast<int64_t>(box.size())};
  box.resize(kTmaMaxRank, 0);
  record.insert(record.end(), box.begin(), box.end());
  return record;
}

std::string tma_parse_error(const Words& words, size_t operands = 2) {
  TmaRequest requests[kTmaMaxDescriptors];
  size_t count = 0;
  return parse_tma_requests(words.data(), words.size(), operands, requests, count);
}

TEST(Tma, ParsesRecords) {
  Words words = tma_record(1, {64, 32}, 128);
  Words second = tma_record(0, {8});
  words.insert(words.end(), second.begin(), second.end());
  TmaRequest requests[kTmaMaxDescriptors];
  size_t count = 0;
  ASSERT_EQ(parse_tma_requests(words.data(), words.size(), 2, requests, count), "");
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(requests[0].operand, 1);
  EXPECT_EQ(requests[0].swizzle, 128);
  EXPECT_EQ(requests[0].rank, 2);
  EXPECT_EQ(requests[0].box[0], 64);
  EXPECT_EQ(requests[0].box[1], 32);
  EXPECT_EQ(requests[1].box[0], 8);
  EXPECT_EQ(parse_tma_requests(nullptr, 0, 2, requests, count), "");
  EXPECT_EQ(count, 0u);
}

TEST(Tma, RejectsMalformedRecords) {
  EXPECT_TRUE(contains(tma_parse_error({1, 2, 3}), "not a multiple of 11"));
  EXPECT_TRUE(contains(tma_parse_error(tma_record(2, {8})), "tma[0] names array 2"));
  EXPECT_TRUE(contains(tma_parse_error(tma_record(0, {8}, 96)), "swizzle is 96"));
  EXPECT_TRUE(contains(tma_parse_error(tma_record(0, {257})), "box[0] is 257"));
  EXPECT_TRUE(contains(tma_parse_error(tma_record(0, {0, 8})), "box[0] is 0"));
  EXPECT_TRUE(contains(tma_parse_error(tma_record(0, {1, 1, 1, 1, 1, 1})), "rank 6"));
  Words bad_fill = tma_record(0, {8});
  bad_fill[4] = 2;
  EXPECT_TRUE(contains(tma_parse_error(bad_fill), "oob_fill is 2"));
  Words many;
  for (size_t i = 0; i <= kTmaMaxDescriptors; ++i) {
    Words r = tma_record(0, {8});
    many.insert(many.end(), r.begin(), r.end());
  }
  EXPECT_TRUE(contains(tma_parse_error(many), "at most 16"));
}

TmaRequest tma_request(int64_t operand, std::vector<int64_t> box, int64_t swizzle = 0) {
  const Words record = tma_record(operand, std::move(box), swizzle);
  TmaRequest request;
  size_t count = 0;
  EXPECT_EQ(parse_tma_requests(record.data(), record.size(), 8, &request, count), "");
  return request;
}

constexpr int kBf16 = 9;

TEST(Tma, EncodesInnermostFirst) {
  alignas(128) static unsigned char memory[256];
  const int64_t dims[] = {3, 4096, 1000};  // (batch, rows, columns), bfloat16
  const TmaArray array{memory, dims, 3, 2, kBf16, true};
  TmaEncoding encoding;
  ASSERT_EQ(encode_tma_request(tma_request(1, {1, 128, 64}, 128), array, encoding), "");
  EXPECT_EQ(encoding.rank, 3u);
  EXPECT_EQ(encoding.data_type, kBf16);
  EXPECT_EQ(encoding.address, static_cast<void*>(memory));
  EXPECT_EQ(encoding.dims[0], 1000u);
  EXPECT_EQ(encoding.dims[1], 4096u);
  EXPECT_EQ(encoding.dims[2], 3u);
  EXPECT_EQ(encoding.strides[0], 2000u);
  EXPECT_EQ(encoding.strides[1], 2000u * 4096u);
  EXPECT_EQ(encoding.box[0], 64u);
  EXPECT_EQ(encoding.box[1], 128u);
  EXPECT_EQ(encoding.box[2], 1u);
  EXPECT_EQ(encoding.swizzle, 3);       // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(encoding.l2_promotion, 2);  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  EXPECT_EQ(encoding.element_strides[0], 1u);
}

std::string tma_encode_error(const TmaRequest& request, const TmaArray& array) {
  TmaEncoding encoding;
  return encode_tma_request(request, array, encoding);
}

TEST(Tma, RejectsWhatTheDriverWould) {
  alignas(128) static unsigned char memory[256];
  const int64_t dims[] = {64, 1000};
  const TmaArray bf16{memory, dims, 2, 2, kBf16, true};
  EXPECT_TRUE(
      contains(tma_encode_error(tma_request(0, {64, 4}), bf16), "must be a multiple of 16 bytes"));
  EXPECT_TRUE(contains(tma_encode_error(tma_request(0, {64, 128}, 128), bf16),
                       "256 bytes, more than the 128-byte swizzle span"));
  EXPECT_TRUE(contains(tma_encode_error(tma_request(0, {64}), bf16), "the box has rank 1"));
  const int64_t odd[] = {64, 1001};
  EXPECT_TRUE(
      contains(tma_encode_error(tma_request(0, {64, 64}, 128), {memory, odd, 2, 2, kBf16, true}),
               "rows are 2002 bytes apart; TMA needs a multiple of 16 (pad the innermost "
               "axis to a multiple of 8 elements)"));
  EXPECT_TRUE(
      contains(tma_encode_error(tma_request(0, {64, 64}), {memory + 2, dims, 2, 2, kBf16, true}),
               "not 16-byte aligned"));
  const int64_t empty[] = {0, 1000};
  EXPECT_TRUE(
      contains(tma_encode_error(tma_request(0, {64, 64}), {memory, empty, 2, 2, kBf16, true}),
               "every dimension from 1 to 2^32"));
  EXPECT_TRUE(contains(tma_encode_error(tma_request(0, {64, 64}), {memory, dims, 2, 2, -1, false}),
                       "a dtype TMA cannot copy"));
  TmaRequest nan_fill = tma_request(0, {64, 16});
  nan_fill.oob_fill = 1;
  EXPECT_TRUE(contains(tma_encode_error(nan_fill, {memory, dims, 2, 4, 3, false}),
                       "oob_fill='nan' needs a floating-point array"));
  // Strides past 64 bits must not wrap into something that passes.
  const int64_t huge[] = {int64_t{1} << 32, int64_t{1} << 32, int64_t{1} << 32};
  EXPECT_TRUE(contains(tma_encode_error(tma_request(0, {1, 1, 2}), {memory, huge, 3, 8, 8, true}),
                       "TMA allows less than 2^40"));
  TmaRequest interleaved = tma_request(0, {64, 64});
  interleaved.interleave = 16;
  EXPECT_TRUE(contains(tma_encode_error(interleaved, bf16), "interleave needs an array of rank 3"));
}

std::vector<uint8_t> sample_cubin() {
  std::vector<uint8_t> cubin(200000);
  for (size_t i = 0; i < cubin.size(); ++i) cubin[i] = static_cast<uint8_t>((i * 7) % 13);
  return cubin;
}

TEST(Artifact, RoundTrips) {
  const std::vector<uint8_t> cubin = sample_cubin();
  const std::vector<uint8_t> blob = encode_artifact("sm_90a", "_Z4reluIfEvv", cubin);
  EXPECT_LT(blob.size(), cubin.size() / 10);  // compressed
  ArtifactView view;
  ASSERT_EQ(parse_artifact(blob.data(), blob.size(), view), "");
  EXPECT_EQ(view.arch, "sm_90a");
  EXPECT_EQ(view.lowered_name, "_Z4reluIfEvv");
  std::vector<uint8_t> back;
  ASSERT_EQ(decompress_cubin(view, back), "");
  EXPECT_EQ(back, cubin);
}

TEST(Artifact, DetectsTruncation) {
  const std::vector<uint8_t> blob = encode_artifact("sm_90a", "k", sample_cubin());
  for (size_t size :
       {size_t{0}, size_t{10}, kArtifactHeaderSize, blob.size() / 2, blob.size() - 1}) {
    ArtifactView view;
    EXPECT_NE(parse_artifact(blob.data(), size, view), "") << size;
  }
  ArtifactView view;
  EXPECT_TRUE(contains(parse_artifact(blob.data(), 12, view), "truncated"));
}

TEST(Artifact, DetectsCorruption) {
  const std::vector<uint8_t> blob = encode_artifact("sm_90a", "k", sample_cubin());
  // Any flipped byte after the magic and version: the CUBIN, the names, a
  // length, the checksum itself.
  for (size_t at :
       {blob.size() - 1, blob.size() / 2, kArtifactHeaderSize, size_t{24}, size_t{33}}) {
    std::vector<uint8_t> damaged = blob;
    damaged[at] ^= 0x5a;
    ArtifactView view;
    EXPECT_NE(parse_artifact(damaged.data(), damaged.size(), view), "") << at;
  }
  std::vector<uint8_t> damaged = blob;
  damaged[blob.size() - 1] ^= 1;
  ArtifactView view;
  EXPECT_TRUE(contains(parse_artifact(damaged.data(), damaged.size(), view), "checksum"));
  // The header alone still parses: the launch path reads only that.
  EXPECT_EQ(parse_artifact_header(damaged.data(), damaged.size(), view), "");
}

TEST(Artifact, RejectsOtherFormats) {
  std::vector<uint8_t> blob = encode_artifact("sm_90a", "k", sample_cubin());
  ArtifactView view;
  std::vector<uint8_t> wrong_magic = blob;
  wrong_magic[0] = 'X';
  EXPECT_TRUE(contains(parse_artifact(wrong_magic.data(), wrong_magic.size(), view), "magic"));
  std::vector<uint8_t> wrong_version = blob;
  wrong_version[8] = static_cast<uint8_t>(kArtifactVersion + 1);
  EXPECT_TRUE(contains(parse_artifact(wrong_version.data(), wrong_version.size(), view),
                       "format version 2"));
}

int64_t word(const TensorParam& param, size_t index) {
  int64_t value;
  std::memcpy(&value, param.bytes + 8 * index, sizeof(value));
  return value;
}

TEST(TensorParam, LaysOutShapeStridesThenPointer) {
  float storage[1];
  const int64_t address = static_cast<int64_t>(reinterpret_cast<uintptr_t>(storage));
  const TensorParam scalar = make_tensor_param(storage, nullptr, 0);
  EXPECT_EQ(scalar.size, 8u);
  EXPECT_EQ(word(scalar, 0), address);

  const int64_t dims[3] = {2, 3, 4};
  const TensorParam rank1 = make_tensor_param(storage, dims, 1);
  EXPECT_EQ(rank1.size, 16u);
  EXPECT_EQ(word(rank1, 0), 2);  // shape; the stride _1 takes no space
  EXPECT_EQ(word(rank1, 1), address);

  const TensorParam rank3 = make_tensor_param(storage, dims, 3);
  EXPECT_EQ(rank3.size, 48u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(word(rank3, i), dims[i]);
  EXPECT_EQ(word(rank3, 3), 12);  // row-major strides of the leading axes
  EXPECT_EQ(word(rank3, 4), 4);
  EXPECT_EQ(word(rank3, 5), address);

  const int64_t eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(make_tensor_param(storage, eight, 8).size, 128u);
  for (size_t rank = 0; rank <= kMaxRank; ++rank) {
    EXPECT_EQ(make_tensor_param(storage, eight, rank).size, tensor_param_size(rank));
  }
}

TEST(Hash, SeparatesFieldsAndSeeds) {
  const std::string a = "cutlax";
  EXPECT_EQ(hash64(a.data(), a.size(), 1), hash64(a.data(), a.size(), 1));
  EXPECT_NE(hash64(a.data(), a.size(), 1), hash64(a.data(), a.size(), 2));
  EXPECT_NE(hash64(a.data(), 5, 0), hash64(a.data(), 6, 0));
  EXPECT_NE(KeyBuilder().add("ab").add("c").hex(), KeyBuilder().add("a").add("bc").hex());
  EXPECT_EQ(KeyBuilder().add("x").hex().size(), 32u);
}

// Lowered names NVRTC 13.0 gave: relu<float>(Tensor<const float, 1>,
// Tensor<float, 1>), and k2<float>(Tensor<const float, 0>, Tensor<const
// float, 3>, Tensor<float, 2>, cute::TmaDescriptor, Params, int, const float*).
constexpr const char* kReluFloat =
    "_Z4reluIfEvN4cute6TensorINS0_10ViewEngineINS0_8gmem_ptrIPKT_EEEENS0_6LayoutINS0_"
    "5tupleIJxEEENSA_"
    "IJNS0_1CILi1EEEEEEEEEENS1_INS2_INS3_IPS4_EEEESF_EE";
constexpr const char* kMixed =
    "_Z2k2IfEvN4cute6TensorINS0_10ViewEngineINS0_8gmem_ptrIPKT_EEEENS0_6LayoutINS0_5tupleIJNS0_"
    "1CILi1EEEEE"
    "ENSA_IJNSB_ILi0EEEEEEEEEENS1_IS8_NS9_INSA_IJxxxEEENSA_IJxxSC_EEEEEEENS1_INS2_INS3_IPS4_"
    "EEEENS9_INSA_"
    "IJxxEEENSA_IJxSC_EEEEEEENS0_13TmaDescriptorE6ParamsiPKf";

std::vector<std::string> described(const KernelSignature& signature) {
  std::vector<std::string> out;
  for (const KernelParameter& p : signature.parameters) out.push_back(describe(p));
  return out;
}

TEST(Signature, ReadsTensorsFromALoweredName) {
  const KernelSignature relu = kernel_signature(kReluFloat);
  ASSERT_TRUE(relu.known);
  EXPECT_TRUE(contains(relu.demangled, "void relu<float>(cute::Tensor<")) << relu.demangled;
  ASSERT_EQ(relu.parameters.size(), 2u);
  const KernelParameter& x = relu.parameters[0];
  EXPECT_EQ(x.kind, KernelParameter::Kind::kTensor);
  EXPECT_EQ(x.element, "float");
  EXPECT_TRUE(x.is_const);
  EXPECT_EQ(x.rank, 1);
  EXPECT_FALSE(relu.parameters[1].is_const);
  EXPECT_EQ(described(relu),
            (std::vector<std::string>{"Tensor<const float, 1>", "Tensor<float, 1>"}));
}

TEST(Signature, TellsRanksDescriptorsAndOtherTypes) {
  const KernelSignature k2 = kernel_signature(kMixed);
  ASSERT_TRUE(k2.known);
  EXPECT_EQ(described(k2),
            (std::vector<std::string>{"Tensor<const float, 0>", "Tensor<const float, 3>",
                                      "Tensor<float, 2>", "TmaDescriptor", "Params", "int",
                                      "float const*"}));
  EXPECT_EQ(k2.parameters[3].kind, KernelParameter::Kind::kTmaDescriptor);
  EXPECT_EQ(k2.parameters[4].kind, KernelParameter::Kind::kOther);
}

TEST(Signature, ParsesDemangledText) {
  // Element types with template arguments and spaces; a rank-8 tensor.
  std::string shape8 = "long long", stride8 = "long long";
  for (int i = 1; i < 8; ++i) {
    shape8 += ", long long";
    stride8 += i < 7 ? ", long long" : ", cute::C<1>";
  }
  const KernelSignature s = parse_demangled_signature(
      "k(cute::Tensor<cute::ViewEngine<cute::gmem_ptr<cutlass::complex<float> const*> >, "
      "cute::Layout<cute::tuple<long>, cute::tuple<cute::C<1> > > >, "
      "cute::Tensor<cute::ViewEngine<cute::gmem_ptr<unsigned short*> >, cute::Layout<cute::tuple<" +
      shape8 + ">, cute::tuple<" + stride8 +
      "> > >, void (*)(int, float), CUtensorMap_st, Outer<int>::Inner<float>)");
  ASSERT_TRUE(s.known);
  EXPECT_EQ(described(s),
            (std::vector<std::string>{"Tensor<const cutlass::complex<float>, 1>",
                                      "Tensor<unsigned short, 8>", "void (*)(int, float)",
                                      "TmaDescriptor", "Outer<int>::Inner<float>"}));
  // A cute::Tensor with another layout (column-major here) is not a cutlax one.
  const KernelSignature column_major = parse_demangled_signature(
      "k(cute::Tensor<cute::ViewEngine<cute::gmem_ptr<float*> >, "
      "cute::Layout<cute::tuple<long long, long long>, cute::tuple<cute::C<1>, long long> > >)");
  ASSERT_EQ(column_major.parameters.size(), 1u);
  EXPECT_EQ(column_major.parameters[0].kind, KernelParameter::Kind::kOther);
  EXPECT_TRUE(parse_demangled_signature("void k<3>()").known);
  EXPECT_TRUE(parse_demangled_signature("void k<3>()").parameters.empty());
}

TEST(Signature, UnknownWhenNotAMangledFunction) {
  EXPECT_FALSE(kernel_signature("relu").known);  // extern "C"
  EXPECT_EQ(demangle("relu"), "");
  EXPECT_EQ(demangle("_Zgarbage"), "");
  EXPECT_FALSE(parse_demangled_signature("k(cute::Tensor<int>>)").known);  // unbalanced
  EXPECT_FALSE(parse_demangled_signature("not a function").known);
}

TEST(ChildCompile, CrashLogsSayWhatHappened) {
  const std::string undeclared =
      crash_log("relu<float>", SIGSEGV, "13.0", false, "kernel.cu(3): error: Tensr", false);
  EXPECT_TRUE(contains(undeclared, "NVRTC 13.0 crashed (SIGSEGV) compiling relu<float>"));
  EXPECT_TRUE(contains(undeclared, "kernel.cu(3): error: Tensr"));
  EXPECT_TRUE(
      contains(crash_log("k<1>", SIGBUS, "13.0", true, "", false), "the source has no errors"));
  EXPECT_TRUE(contains(crash_log("k", SIGSEGV, "13.0", false, "killed by SIGSEGV", true),
                       "did not finish either: killed by SIGSEGV"));
}

// Real compiles need NVRTC and the CUTLASS/CUDA headers; skipped without them.
class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      api_ = &nvrtc();
    } catch (const std::runtime_error& e) {
      GTEST_SKIP() << e.what();
    }
  }

  static CompileRequest request(const std::string& source, const std::string& entry) {
    CompileRequest r{source, entry, "sm_90a", {CUTLAX_TEST_CUTLASS_INCLUDE_DIR}, {}};
    std::stringstream dirs(CUTLAX_TEST_CUDA_HEADER_DIRS);
    for (std::string dir; std::getline(dirs, dir, ':');) r.include_dirs.push_back(dir);
    return r;
  }

  // The background PCH build must not outlive the test binary's NVRTC.
  static void TearDownTestSuite() { stop_pch_builds(); }

  const Nvrtc* api_ = nullptr;
};

// The path of the one file in `dir`, or "" unless there is exactly one.
std::string only_file(const std::string& dir) {
  std::vector<std::string> names;
  DIR* listing = opendir(dir.c_str());
  while (dirent* entry = listing ? readdir(listing) : nullptr) {
    if (entry->d_name[0] != '.') names.push_back(entry->d_name);
  }
  if (listing) closedir(listing);
  return names.size() == 1 ? dir + "/" + names[0] : "";
}

constexpr const char* kRelu = R"(
template <class T>
__global__ void relu(cutlax::jit::Tensor<const T, 1> x, cutlax::jit::Tensor<T, 1> y) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < cute::size(x)) y(i) = x(i) > T(0) ? x(i) : T(0);
}
)";

TEST_F(NvrtcTest, CompilesAPreludeKernelToSm90a) {
  const CompileRequest r = request(kRelu, "relu<float>");
  CompileOutput out = run_nvrtc(*api_, program_text(r.source), r.entry, nvrtc_options(r));
  ASSERT_TRUE(out.ok) << out.log;
  EXPECT_TRUE(contains(out.lowered_name, "relu")) << out.lowered_name;
  ASSERT_GE(out.cubin.size(), 4u);
  EXPECT_EQ(std::memcmp(out.cubin.data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
}

TEST_F(NvrtcTest, ReportsErrorsAtTheUsersLine) {
  const CompileRequest r =
      request("__global__ void k(cutlax::jit::Tensor<float, 0> y) {\n  y(0) = 1.0f\n}\n", "k");
  CompileOutput out = run_nvrtc(*api_, program_text(r.source), r.entry, nvrtc_options(r));
  EXPECT_FALSE(out.ok);
  EXPECT_TRUE(contains(out.log, "kernel.cu(3): error")) << out.log;
}

TEST_F(NvrtcTest, CachesInMemoryAndOnDisk) {
  char dir_template[] = "/tmp/cutlax-jit-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const CompileRequest r = request(kRelu, "relu<cutlass::half_t>");

  CompileCache first("test");
  const CompileResult compiled = first.compile(r, dir);
  ASSERT_TRUE(compiled.artifact) << compiled.log;
  EXPECT_EQ(first.compile(r, dir).artifact, compiled.artifact);
  EXPECT_EQ(first.stats().misses, 1);
  EXPECT_EQ(first.stats().hits, 1);
  EXPECT_EQ(first.stats().directory, dir);

  // Another cache (as in a new process) finds the entry on disk.
  CompileCache second("test");
  const CompileResult from_disk = second.compile(r, dir);
  ASSERT_TRUE(from_disk.artifact);
  EXPECT_EQ(*from_disk.artifact, *compiled.artifact);
  EXPECT_EQ(from_disk.lowered_name, compiled.lowered_name);
  EXPECT_EQ(second.stats().disk_hits, 1);
  EXPECT_EQ(second.stats().misses, 0);

  // A damaged entry is counted, deleted and rebuilt.
  const std::string entry = only_file(dir);
  ASSERT_FALSE(entry.empty());
  {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('\x5a');
  }
  CompileCache third("test");
  const CompileResult rebuilt = third.compile(r, dir);
  ASSERT_TRUE(rebuilt.artifact);
  EXPECT_EQ(third.stats().corrupt, 1);
  EXPECT_EQ(third.stats().misses, 1);
  ArtifactView view;
  std::ifstream reread(entry, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(reread)), {});
  EXPECT_EQ(parse_artifact(bytes.data(), bytes.size(), view), "");

  // clear(disk) deletes the entries of our format only.
  std::ofstream(dir + "/unrelated.txt") << "keep";
  third.clear(/*disk=*/true, "");
  EXPECT_NE(access(entry.c_str(), F_OK), 0);
  EXPECT_EQ(access((dir + "/unrelated.txt").c_str(), F_OK), 0);
  std::remove((dir + "/unrelated.txt").c_str());
  rmdir(dir.c_str());
}

// NVRTC 13.0 segfaults on an undeclared parameter type with a name expression.
constexpr const char* kCrashing = R"(
template <class T>
__global__ void relu(Tensr<const T, 1> x, Tensr<T, 1> y) {}
)";

TEST_F(NvrtcTest, CompilesInAChildAsInThisProcess) {
  const CompileRequest r = request(kRelu, "relu<float>");
  const ChildOutcome child =
      run_nvrtc_in_child(*api_, program_text(r.source), r.entry, nvrtc_options(r), 600);
  ASSERT_EQ(child.status, ChildOutcome::Status::kFinished);
  ASSERT_TRUE(child.output.ok) << child.output.log;
  const CompileOutput here = run_nvrtc(*api_, program_text(r.source), r.entry, nvrtc_options(r));
  EXPECT_EQ(child.output.lowered_name, here.lowered_name);
  EXPECT_EQ(child.output.cubin.size(), here.cubin.size());
  // A compile error travels back with its log.
  const CompileRequest broken = request("__global__ void k() { int x = ; }", "k");
  const CompileOutput failed =
      compile_isolated(*api_, program_text(broken.source), broken.entry, nvrtc_options(broken));
  EXPECT_FALSE(failed.ok);
  EXPECT_FALSE(failed.crashed);
  EXPECT_TRUE(contains(failed.log, "kernel.cu(1): error")) << failed.log;
}

TEST_F(NvrtcTest, ACrashIsACompileErrorWithTheRealError) {
  const CompileRequest r = request(kCrashing, "relu<float>");
  const ChildOutcome child =
      run_nvrtc_in_child(*api_, program_text(r.source), r.entry, nvrtc_options(r), 600);
  if (child.status == ChildOutcome::Status::kFinished) GTEST_SKIP() << "this NVRTC does not crash";
  EXPECT_EQ(child.status, ChildOutcome::Status::kCrashed);
  EXPECT_EQ(child.signal, SIGSEGV);
  const CompileOutput out =
      compile_isolated(*api_, program_text(r.source), r.entry, nvrtc_options(r));
  EXPECT_FALSE(out.ok);
  EXPECT_TRUE(out.crashed);
  EXPECT_TRUE(contains(out.log, "crashed (SIGSEGV) compiling relu<float>")) << out.log;
  EXPECT_TRUE(contains(out.log, "kernel.cu(3): error: identifier \"Tensr\" is undefined"))
      << out.log;
}

TEST_F(NvrtcTest, AChildPastItsTimeoutIsStopped) {
  const CompileRequest r = request(kRelu, "relu<double>");
  const ChildOutcome child =
      run_nvrtc_in_child(*api_, program_text(r.source), r.entry, nvrtc_options(r), 0.01);
  EXPECT_EQ(child.status, ChildOutcome::Status::kTimedOut);
}

}  // namespace
}  // namespace cutlax::jit
