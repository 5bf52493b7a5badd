// Fuzzes the reader of cutlax.jit artifacts (src/jit/artifact.hpp): the
// bytes come from the disk cache and from the `cubin` attribute of an
// exported program, so any bytes must parse or be rejected with a message,
// and no claimed size may make the reader allocate more than the bytes can
// hold.
//
// The first byte picks what the rest is:
//   even  an artifact, read as the jit runtime reads one: the header alone
//         (the launch path), the checked artifact, its CUBIN; then again
//         with the checksum recomputed, so the fuzzer gets past the checksum
//         to the lengths and the zlib stream behind it (a damaged file can
//         not do that, but a crafted exported program can);
//   odd   an architecture length byte, a name length byte, those bytes and
//         the rest as the CUBIN: encoded, it must parse back to the same
//         fields, and a one-byte change or a truncation must be rejected.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "jit/artifact.hpp"
#include "jit/hash.hpp"

namespace {

using cutlax::jit::ArtifactView;
using cutlax::jit::kArtifactHeaderSize;

using cutlax::jit::kMaxInflation;

[[noreturn]] void violated(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_artifact: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  __builtin_trap();
}

// The view must describe bytes inside the artifact, laid out as the header
// documents.
void check_view(const uint8_t* data, size_t size, const ArtifactView& view) {
  const auto* begin = reinterpret_cast<const char*>(data);
  const auto* end = begin + size;
  if (view.arch.data() != begin + kArtifactHeaderSize ||
      view.lowered_name.data() != view.arch.data() + view.arch.size() ||
      view.compressed_cubin !=
          reinterpret_cast<const uint8_t*>(view.lowered_name.data() + view.lowered_name.size()) ||
      reinterpret_cast<const char*>(view.compressed_cubin) + view.compressed_size != end) {
    violated("the parsed view does not tile the artifact");
  }
}

// Reads `bytes` as the jit runtime does, all the way to the CUBIN when the
// artifact checks out.
void read_artifact(const std::vector<uint8_t>& bytes) {
  ArtifactView header, view;
  const std::string header_problem = parse_artifact_header(bytes.data(), bytes.size(), header);
  const std::string problem = parse_artifact(bytes.data(), bytes.size(), view);
  if (!header_problem.empty()) {
    if (problem.empty()) violated("parse_artifact accepted what parse_artifact_header did not");
    return;
  }
  check_view(bytes.data(), bytes.size(), header);

  // decompress_cubin is public: on a view whose checksum nobody checked it
  // must still refuse a size it cannot inflate to, not allocate it.
  std::vector<uint8_t> cubin;
  if (decompress_cubin(header, cubin).empty() && cubin.size() != header.cubin_size) {
    violated("decompress_cubin returned a CUBIN of another size than the header's");
  }
  if (!problem.empty()) return;
  check_view(bytes.data(), bytes.size(), view);
  if (view.cubin_size > kMaxInflation * view.compressed_size) {
    violated(
        "parse_artifact accepted a CUBIN size zlib cannot inflate to",
        std::to_string(view.cubin_size) + " bytes from " + std::to_string(view.compressed_size));
  }
  cubin.clear();
  if (decompress_cubin(view, cubin).empty() && cubin.size() != view.cubin_size) {
    violated("decompress_cubin returned a CUBIN of another size than the artifact's");
  }
}

// The checksum as the header defines it (bytes 32-39): hash64 of bytes 0-31,
// then of everything from byte 40 on.
void fix_checksum(std::vector<uint8_t>& bytes) {
  if (bytes.size() < kArtifactHeaderSize) return;
  const uint64_t sum =
      cutlax::jit::hash64(bytes.data() + kArtifactHeaderSize, bytes.size() - kArtifactHeaderSize,
                          cutlax::jit::hash64(bytes.data(), 32, 0));
  for (int i = 0; i < 8; ++i) bytes[32 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

void round_trip(const uint8_t* data, size_t size) {
  if (size < 3) return;
  const size_t arch_size = std::min<size_t>(data[0] % 33, size - 2);
  const size_t name_size = std::min<size_t>(data[1] % 129, size - 2 - arch_size);
  const std::string_view arch(reinterpret_cast<const char*>(data + 2), arch_size);
  const std::string_view name(arch.data() + arch_size, name_size);
  const std::vector<uint8_t> cubin(data + 2 + arch_size + name_size, data + size);

  const std::vector<uint8_t> blob = cutlax::jit::encode_artifact(arch, name, cubin);
  ArtifactView view;
  if (std::string problem = parse_artifact(blob.data(), blob.size(), view); !problem.empty()) {
    violated("an encoded artifact does not parse", problem);
  }
  check_view(blob.data(), blob.size(), view);
  std::vector<uint8_t> back;
  if (std::string problem = decompress_cubin(view, back); !problem.empty()) {
    violated("an encoded artifact's CUBIN does not decompress", problem);
  }
  if (view.arch != arch || view.lowered_name != name || back != cubin) {
    violated("an artifact does not parse back to what was encoded");
  }

  // Every byte is covered by the magic, the version, the lengths or the
  // checksum; one changed byte must never go unnoticed (the hash absorbs
  // words bijectively), and neither must a truncation.
  const size_t at = (size_t{data[0]} << 8 | data[1]) % blob.size();
  const uint8_t flip = data[size - 1] | 1;
  std::vector<uint8_t> damaged = blob;
  damaged[at] ^= flip;
  if (parse_artifact(damaged.data(), damaged.size(), view).empty()) {
    violated("a changed byte went unnoticed", "offset " + std::to_string(at));
  }
  if (parse_artifact(blob.data(), at, view).empty()) {
    violated("a truncated artifact parsed", std::to_string(at) + " bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    round_trip(data + 1, size - 1);
    return 0;
  }
  std::vector<uint8_t> bytes(data + 1, data + size);
  read_artifact(bytes);
  fix_checksum(bytes);
  read_artifact(bytes);
  return 0;
}
