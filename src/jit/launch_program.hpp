// The launch program: a kernel's grid, block and cluster sizes as
// expressions of its operands' dimensions, recorded at trace time and
// evaluated at every launch from the real buffer shapes (so one artifact
// exported with symbolic shapes launches the right grid at every size). Pure
// C++, no FFI or CUDA types.
//
// The program is nine expressions in order: grid.x, grid.y, grid.z, block.x,
// block.y, block.z, cluster.x, cluster.y, cluster.z (six, without the
// cluster, in artifacts made before clusters existed: the cluster is then
// 1x1x1). Each is its length in int64 words, then those words: a sequence of
// tokens in reverse Polish notation.
//
//   0 v    push the constant v
//   1 i a  push dimension a (>= 0) of operand i (inputs, then outputs)
//   2 i    push the element count of operand i
//   3 add  4 sub  5 mul
//   6 floordiv (rounds toward -infinity, as Python's //)
//   7 cdiv (ceil(a / b), as Python's -(-a // b))
//   8 min  9 max
//   10     push the launching GPU's multiprocessor count
//
// e.g. grid.x = cdiv(x0.size, 256) is [5, 2, 0, 0, 256, 7].
//
// Every way a program can be wrong is an error naming the expression (and
// never undefined behaviour): unknown opcode, truncation, operand or axis out
// of range, stack underflow or overflow, values left over, division by zero,
// int64 overflow; and launch sizes CUDA cannot run: a negative grid or block
// size, a block dimension < 1, block.x or .y over 1024, block.z over 64, more
// than 1024 threads per block, grid.x over 2^31 - 1, grid.y or .z over 65535,
// a cluster dimension < 1, more than 8 blocks per cluster (CUDA's portable
// limit), a grid dimension that is not a multiple of the cluster's.
// A grid dimension of 0 (an empty input) is valid: the launch does nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cutlax::jit {

enum LaunchOpcode : int64_t {
  kPushConstant = 0,
  kPushDimension = 1,
  kPushSize = 2,
  kAdd = 3,
  kSub = 4,
  kMul = 5,
  kFloorDiv = 6,
  kCeilDiv = 7,
  kMin = 8,
  kMax = 9,
  kPushMultiprocessorCount = 10,
};

// What a launch program may read besides the operands' shapes.
struct LaunchDevice {
  int64_t multiprocessor_count = 0;
};

// An operand's shape as the evaluator sees it.
struct OperandShape {
  const int64_t* dims;
  size_t rank;
};

struct LaunchGeometry {
  std::array<int64_t, 3> grid;
  std::array<int64_t, 3> block;
  std::array<int64_t, 3> cluster;
  // Some grid dimension is 0: nothing to launch.
  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
  bool clustered() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
};

struct LaunchEvaluation {
  LaunchGeometry geometry{};
  std::string error;  // empty on success, else e.g. "grid.y: division by zero"
  bool ok() const { return error.empty(); }
};

LaunchEvaluation evaluate_launch_program(const int64_t* words, size_t size,
                                         const OperandShape* operands, size_t operand_count,
                                         const LaunchDevice& device = {});

}  // namespace cutlax::jit
