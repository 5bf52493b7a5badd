#include "launch_program.hpp"

#include <string_view>

namespace cutlax::jit {
namespace {

constexpr const char* kExpressionNames[9] = {"grid.x",    "grid.y",    "grid.z",
                                             "block.x",   "block.y",   "block.z",
                                             "cluster.x", "cluster.y", "cluster.z"};
// Programs made before clusters existed end after the block.
constexpr int kExpressionsWithoutCluster = 6;
constexpr int kExpressions = 9;
// Deeper than any launch expression a person writes.
constexpr size_t kMaxStack = 64;

constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxBlockXY = 1024;
constexpr int64_t kMaxBlockZ = 64;
constexpr int64_t kMaxThreadsPerBlock = 1024;
constexpr int64_t kMaxPortableClusterBlocks = 8;

// Floor division as Python's //; the caller has excluded b == 0 and
// INT64_MIN / -1.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Evaluates one expression; returns an empty string or what went wrong.
std::string evaluate_expression(const int64_t* tokens, size_t length, const OperandShape* operands,
                                size_t operand_count, const LaunchDevice& device, int64_t& value) {
  int64_t stack[kMaxStack];
  size_t depth = 0;
  size_t pos = 0;
  auto operand_at = [&](int64_t index, const OperandShape*& shape) -> std::string {
    if (index < 0 || static_cast<uint64_t>(index) >= operand_count) {
      return "operand " + std::to_string(index) + " is out of range (the kernel has " +
             std::to_string(operand_count) + " operands)";
    }
    shape = &operands[index];
    return {};
  };
  while (pos < length) {
    const size_t at = pos;
    const int64_t opcode = tokens[pos++];
    auto need = [&](size_t words) { return pos + words <= length; };
    auto where = [&] { return " (word " + std::to_string(at) + ")"; };
    int64_t pushed = 0;
    switch (opcode) {
      case kPushConstant:
        if (!need(1)) return "truncated program: a constant is missing its value" + where();
        pushed = tokens[pos++];
        break;
      case kPushDimension: {
        if (!need(2))
          return "truncated program: a dimension is missing its operand or axis" + where();
        const OperandShape* shape = nullptr;
        std::string problem = operand_at(tokens[pos], shape);
        if (!problem.empty()) return problem + where();
        int64_t axis = tokens[pos + 1];
        if (axis < 0 || static_cast<uint64_t>(axis) >= shape->rank) {
          return "axis " + std::to_string(axis) + " of operand " + std::to_string(tokens[pos]) +
                 " is out of range (it has rank " + std::to_string(shape->rank) + ")" + where();
        }
        pushed = shape->dims[axis];
        pos += 2;
        break;
      }
      case kPushSize: {
        if (!need(1)) return "truncated program: a size is missing its operand" + where();
        const OperandShape* shape = nullptr;
        std::string problem = operand_at(tokens[pos], shape);
        if (!problem.empty()) return problem + where();
        pushed = 1;
        for (size_t axis = 0; axis < shape->rank; ++axis) {
          if (__builtin_mul_overflow(pushed, shape->dims[axis], &pushed)) {
            return "int64 overflow in the size of operand " + std::to_string(tokens[pos]) + where();
          }
        }
        pos += 1;
        break;
      }
      case kPushMultiprocessorCount:
        if (device.multiprocessor_count <= 0) {
          return "the GPU's multiprocessor count is unknown here" + where();
        }
        pushed = device.multiprocessor_count;
        break;
      case kAdd:
      case kSub:
      case kMul:
      case kFloorDiv:
      case kCeilDiv:
      case kMin:
      case kMax: {
        if (depth < 2) return "stack underflow: an operator needs two values" + where();
        const int64_t a = stack[depth - 2], b = stack[depth - 1];
        depth -= 2;
        bool overflow = false;
        switch (opcode) {
          case kAdd:
            overflow = __builtin_add_overflow(a, b, &pushed);
            break;
          case kSub:
            overflow = __builtin_sub_overflow(a, b, &pushed);
            break;
          case kMul:
            overflow = __builtin_mul_overflow(a, b, &pushed);
            break;
          case kFloorDiv:
          case kCeilDiv: {
            if (b == 0) return "division by zero" + where();
            // ceil(a / b) == -floor(-a / b); negating INT64_MIN overflows,
            // and so does INT64_MIN / -1.
            int64_t dividend = a;
            if (opcode == kCeilDiv && __builtin_sub_overflow(int64_t{0}, a, &dividend)) {
              overflow = true;
              break;
            }
            if (dividend == INT64_MIN && b == -1) {
              overflow = true;
              break;
            }
            pushed = floor_div(dividend, b);
            if (opcode == kCeilDiv) pushed = -pushed;  // |floor| <= |dividend|: cannot overflow
            break;
          }
          case kMin:
            pushed = a < b ? a : b;
            break;
          default:
            pushed = a > b ? a : b;
            break;
        }
        if (overflow) return "int64 overflow" + where();
        break;
      }
      default:
        return "unknown opcode " + std::to_string(opcode) + where();
    }
    if (depth == kMaxStack) {
      return "stack overflow: more than " + std::to_string(kMaxStack) + " values" + where();
    }
    stack[depth++] = pushed;
  }
  if (depth == 0) return "the expression is empty";
  if (depth > 1) {
    return std::to_string(depth - 1) + " values left over: the expression does not reduce to one";
  }
  value = stack[0];
  return {};
}

std::string check_limits(const LaunchGeometry& g) {
  constexpr int64_t kGridLimits[3] = {kMaxGridX, kMaxGridYZ, kMaxGridYZ};
  constexpr int64_t kBlockLimits[3] = {kMaxBlockXY, kMaxBlockXY, kMaxBlockZ};
  for (int i = 0; i < 3; ++i) {
    if (g.grid[i] < 0 || g.grid[i] > kGridLimits[i]) {
      return std::string(kExpressionNames[i]) + " is " + std::to_string(g.grid[i]) +
             "; CUDA allows 0 to " + std::to_string(kGridLimits[i]);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (g.block[i] < 1 || g.block[i] > kBlockLimits[i]) {
      return std::string(kExpressionNames[3 + i]) + " is " + std::to_string(g.block[i]) +
             "; CUDA allows 1 to " + std::to_string(kBlockLimits[i]);
    }
  }
  // Each factor is at most 1024, so the product fits easily.
  const int64_t threads = g.block[0] * g.block[1] * g.block[2];
  if (threads > kMaxThreadsPerBlock) {
    return "the block has " + std::to_string(threads) + " threads (" + std::to_string(g.block[0]) +
           " x " + std::to_string(g.block[1]) + " x " + std::to_string(g.block[2]) +
           "); CUDA allows at most " + std::to_string(kMaxThreadsPerBlock);
  }
  for (int i = 0; i < 3; ++i) {
    if (g.cluster[i] < 1 || g.cluster[i] > kMaxPortableClusterBlocks) {
      return std::string(kExpressionNames[6 + i]) + " is " + std::to_string(g.cluster[i]) +
             "; it must be 1 to " + std::to_string(kMaxPortableClusterBlocks);
    }
  }
  const int64_t cluster_blocks = g.cluster[0] * g.cluster[1] * g.cluster[2];
  if (cluster_blocks > kMaxPortableClusterBlocks) {
    return "the cluster has " + std::to_string(cluster_blocks) + " blocks (" +
           std::to_string(g.cluster[0]) + " x " + std::to_string(g.cluster[1]) + " x " +
           std::to_string(g.cluster[2]) + "); CUDA's portable limit is " +
           std::to_string(kMaxPortableClusterBlocks);
  }
  for (int i = 0; i < 3; ++i) {
    if (g.grid[i] % g.cluster[i] != 0) {
      return std::string(kExpressionNames[i]) + " is " + std::to_string(g.grid[i]) +
             ", not a multiple of " + kExpressionNames[6 + i] + " (" +
             std::to_string(g.cluster[i]) + ")";
    }
  }
  return {};
}

}  // namespace

LaunchEvaluation evaluate_launch_program(const int64_t* words, size_t size,
                                         const OperandShape* operands, size_t operand_count,
                                         const LaunchDevice& device) {
  LaunchEvaluation result;
  int64_t values[kExpressions] = {0, 0, 0, 0, 0, 0, 1, 1, 1};
  size_t pos = 0;
  for (int e = 0; e < kExpressions; ++e) {
    if (e == kExpressionsWithoutCluster && pos == size) break;
    const std::string_view name = kExpressionNames[e];
    if (pos >= size) {
      result.error = std::string(name) + ": truncated program: the expression is missing";
      return result;
    }
    const int64_t length = words[pos++];
    if (length < 0 || static_cast<uint64_t>(length) > size - pos) {
      result.error = std::string(name) + ": truncated program: the expression claims " +
                     std::to_string(length) + " words but " + std::to_string(size - pos) +
                     " remain";
      return result;
    }
    std::string problem = evaluate_expression(words + pos, static_cast<size_t>(length), operands,
                                              operand_count, device, values[e]);
    if (!problem.empty()) {
      result.error = std::string(name) + ": " + problem;
      return result;
    }
    pos += static_cast<size_t>(length);
  }
  if (pos != size) {
    result.error = std::to_string(size - pos) + " words follow the nine launch expressions";
    return result;
  }
  result.geometry = {{values[0], values[1], values[2]},
                     {values[3], values[4], values[5]},
                     {values[6], values[7], values[8]}};
  result.error = check_limits(result.geometry);
  return result;
}

}  // namespace cutlax::jit
