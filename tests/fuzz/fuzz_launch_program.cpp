// Fuzzes the launch-program evaluator (src/jit/launch_program.hpp): the
// program comes from the `launch` attribute of an exported program, so any
// words with any operand shapes must evaluate or be rejected, never overflow
// or read out of bounds. On success the geometry must be launchable (the
// header's limits), and it must equal what a second evaluator, written
// straight from the header's description in 128-bit arithmetic, computes.
//
// The input, front to back (past its end every byte reads 0):
//   count     operands, 0-8 (the byte mod 9); bit 7 set: the GPU's
//             multiprocessor count is 132, else unknown (0)
//   shapes    per operand a rank byte (0-8), then per dimension a byte:
//             < 0xc0 that value, else 8 bytes: any non-negative int64
//   words     the rest, one per tag byte: < 0x80 that value (opcodes,
//             indices, small constants), 0x80-0xbf -1 to -64, >= 0xc0 the
//             next 8 bytes as an int64 (the extremes)
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_input.hpp"
#include "jit/launch_program.hpp"

namespace {

using cutlax::jit::LaunchDevice;
using cutlax::jit::LaunchEvaluation;
using cutlax::jit::OperandShape;

constexpr size_t kMaxOperands = 8;
constexpr size_t kMaxRank = 8;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "fuzz_launch_program: %s\n", what);
  __builtin_trap();
}

// The reference: each operation in __int128, which holds any product or
// difference of two int64s exactly, and a result outside int64 is the
// overflow the header says is an error. Which error comes first does not
// matter here, only whether there is one, so this stays a direct reading
// of the header's rules. (Intermediates are int64 in both: a size is
// multiplied up axis by axis, and cdiv negates its dividend first.)
using Wide = __int128;

bool fits(Wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

Wide floor_div(Wide a, Wide b) {
  Wide q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}

std::optional<int64_t> reference_expression(const int64_t* t, size_t length,
                                            const std::vector<OperandShape>& operands,
                                            int64_t multiprocessors) {
  std::vector<int64_t> stack;
  auto push = [&](Wide v) {
    if (!fits(v) || stack.size() == 64) return false;  // at most 64 values
    stack.push_back(static_cast<int64_t>(v));
    return true;
  };
  auto operand = [&](int64_t i) -> const OperandShape* {
    return i >= 0 && static_cast<uint64_t>(i) < operands.size() ? &operands[i] : nullptr;
  };
  for (size_t pos = 0; pos < length;) {
    const int64_t op = t[pos++];
    if (op == 0) {
      if (pos + 1 > length || !push(t[pos++])) return std::nullopt;
    } else if (op == 1) {
      if (pos + 2 > length) return std::nullopt;
      const OperandShape* shape = operand(t[pos]);
      const int64_t axis = t[pos + 1];
      pos += 2;
      if (!shape || axis < 0 || static_cast<uint64_t>(axis) >= shape->rank) return std::nullopt;
      if (!push(shape->dims[axis])) return std::nullopt;
    } else if (op == 2) {
      if (pos + 1 > length) return std::nullopt;
      const OperandShape* shape = operand(t[pos++]);
      if (!shape) return std::nullopt;
      Wide size = 1;
      for (size_t axis = 0; axis < shape->rank; ++axis) {
        size *= shape->dims[axis];
        if (!fits(size)) return std::nullopt;
      }
      if (!push(size)) return std::nullopt;
    } else if (op == 10) {
      if (multiprocessors <= 0 || !push(multiprocessors)) return std::nullopt;
    } else if (op >= 3 && op <= 9) {
      if (stack.size() < 2) return std::nullopt;
      const Wide b = stack.back();
      stack.pop_back();
      const Wide a = stack.back();
      stack.pop_back();
      Wide r;
      switch (op) {
        case 3:
          r = a + b;
          break;
        case 4:
          r = a - b;
          break;
        case 5:
          r = a * b;
          break;
        case 6:
          if (b == 0) return std::nullopt;
          r = floor_div(a, b);
          break;
        case 7:
          if (b == 0 || !fits(-a)) return std::nullopt;
          r = -floor_div(-a, b);
          break;
        case 8:
          r = a < b ? a : b;
          break;
        default:
          r = a > b ? a : b;
          break;
      }
      if (!push(r)) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  if (stack.size() != 1) return std::nullopt;
  return stack[0];
}

// The nine values (grid, block, cluster; a program of six has the cluster
// 1 x 1 x 1), or nothing where the program is malformed or the geometry
// outside CUDA's limits.
std::optional<std::array<int64_t, 9>> reference(const std::vector<int64_t>& words,
                                                const std::vector<OperandShape>& operands,
                                                int64_t multiprocessors) {
  std::array<int64_t, 9> values{0, 0, 0, 0, 0, 0, 1, 1, 1};
  size_t pos = 0;
  for (int e = 0; e < 9; ++e) {
    if (e == 6 && pos == words.size()) break;
    if (pos >= words.size()) return std::nullopt;
    const int64_t length = words[pos++];
    if (length < 0 || static_cast<uint64_t>(length) > words.size() - pos) return std::nullopt;
    std::optional<int64_t> v =
        reference_expression(words.data() + pos, length, operands, multiprocessors);
    if (!v) return std::nullopt;
    values[e] = *v;
    pos += length;
  }
  if (pos != words.size()) return std::nullopt;
  const int64_t limits[6] = {(int64_t{1} << 31) - 1, 65535, 65535, 1024, 1024, 64};
  for (int e = 0; e < 6; ++e) {
    if (values[e] < (e < 3 ? 0 : 1) || values[e] > limits[e]) return std::nullopt;
  }
  if (values[3] * values[4] * values[5] > 1024) return std::nullopt;
  for (int e = 6; e < 9; ++e) {
    if (values[e] < 1 || values[e] > 8) return std::nullopt;
  }
  if (values[6] * values[7] * values[8] > 8) return std::nullopt;
  for (int e = 0; e < 3; ++e) {
    if (values[e] % values[6 + e] != 0) return std::nullopt;
  }
  return values;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cutlax::fuzz::FuzzInput in(data, size);
  const uint8_t first = in.byte();
  const size_t count = first % (kMaxOperands + 1);
  const int64_t multiprocessors = (first & 0x80) ? 132 : 0;
  // Exactly-sized per operand, so ASan flags a read past an operand's rank.
  std::vector<std::vector<int64_t>> dims(count);
  std::vector<OperandShape> operands(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t rank = in.byte() % (kMaxRank + 1);
    for (size_t axis = 0; axis < rank; ++axis) {
      const uint8_t b = in.byte();
      // XLA's dimensions are never negative.
      dims[i].push_back(b < 0xc0 ? b : in.integer<int64_t>() & INT64_MAX);
    }
  }
  for (size_t i = 0; i < count; ++i) operands[i] = {dims[i].data(), dims[i].size()};

  std::vector<int64_t> words;
  while (!in.done()) {
    const uint8_t tag = in.byte();
    words.push_back(tag < 0x80 ? tag : tag < 0xc0 ? -int64_t{tag - 0x7f} : in.integer<int64_t>());
  }

  const LaunchEvaluation result = cutlax::jit::evaluate_launch_program(
      words.data(), words.size(), operands.data(), count, LaunchDevice{multiprocessors});
  const auto expected = reference(words, operands, multiprocessors);
  if (result.ok() != expected.has_value()) {
    violated(result.ok() ? "accepted a program the reference rejects"
                         : "rejected a program the reference accepts");
  }
  if (!result.ok()) return 0;

  // The documented guarantees, checked directly as well.
  const auto& grid = result.geometry.grid;
  const auto& block = result.geometry.block;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] < 0 || block[i] < 1) violated("a negative grid or an empty block");
  }
  if (block[0] > 1024 || block[1] > 1024 || block[2] > 64) violated("a block dimension too large");
  if (block[0] * block[1] * block[2] > 1024) violated("more than 1024 threads per block");
  if (grid[0] > (int64_t{1} << 31) - 1 || grid[1] > 65535 || grid[2] > 65535) {
    violated("a grid dimension too large");
  }
  const auto& cluster = result.geometry.cluster;
  for (int i = 0; i < 3; ++i) {
    if (cluster[i] < 1 || grid[i] % cluster[i] != 0)
      violated("a grid that is not a cluster multiple");
  }
  if (cluster[0] * cluster[1] * cluster[2] > 8) violated("more than 8 blocks per cluster");
  for (int i = 0; i < 3; ++i) {
    if (grid[i] != (*expected)[i] || block[i] != (*expected)[3 + i] ||
        cluster[i] != (*expected)[6 + i]) {
      violated("a value differs from the reference");
    }
  }
  return 0;
}
