#include "artifact.hpp"

#include <zlib.h>

#include <cstring>

#include "hash.hpp"

namespace cutlax::jit {
namespace {

constexpr char kMagic[8] = {'c', 'u', 't', 'l', 'a', 'x', 'j', 't'};

void put_le(std::vector<uint8_t>& out, size_t offset, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t get_le(const uint8_t* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{data[i]} << (8 * i);
  return value;
}

// Covers the header's fields (bytes 0-31) and the payload, so a damaged
// length is caught as surely as a damaged CUBIN.
uint64_t checksum(const uint8_t* data, size_t size) {
  return hash64(data + kArtifactHeaderSize, size - kArtifactHeaderSize, hash64(data, 32, 0));
}

// decompress_cubin allocates the claimed size before zlib reads a byte, so
// the claim must be one the compressed bytes can back. Otherwise a 40-byte
// artifact with a valid checksum (anyone can compute one) claiming 1 GiB
// would make it allocate and zero 1 GiB, and a view whose checksum nobody
// checked (parse_artifact_header's) up to 2^64 - 1 bytes.
std::string check_cubin_size(const ArtifactView& view) {
  if (view.cubin_size > kMaxCubinSize) {
    return "the artifact claims a " + std::to_string(view.cubin_size) +
           "-byte CUBIN, over the 1 GiB limit (corrupted)";
  }
  if (view.cubin_size > kMaxInflation * view.compressed_size) {
    return "the artifact claims a " + std::to_string(view.cubin_size) + "-byte CUBIN from " +
           std::to_string(view.compressed_size) +
           " compressed bytes, more than zlib can inflate them to (corrupted)";
  }
  return {};
}

}  // namespace

std::vector<uint8_t> encode_artifact(std::string_view arch, std::string_view lowered_name,
                                     const std::vector<uint8_t>& cubin) {
  uLongf compressed_size = compressBound(cubin.size());
  std::vector<uint8_t> out(kArtifactHeaderSize + arch.size() + lowered_name.size() +
                           compressed_size);
  uint8_t* payload = out.data() + kArtifactHeaderSize;
  std::memcpy(payload, arch.data(), arch.size());
  std::memcpy(payload + arch.size(), lowered_name.data(), lowered_name.size());
  uint8_t* compressed = payload + arch.size() + lowered_name.size();
  // compress2 only fails for a too-small buffer or bad level, neither
  // possible with compressBound and Z_BEST_SPEED.
  compress2(compressed, &compressed_size, cubin.data(), cubin.size(), Z_BEST_SPEED);
  out.resize(kArtifactHeaderSize + arch.size() + lowered_name.size() + compressed_size);

  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put_le(out, 8, kArtifactVersion, 4);
  put_le(out, 12, arch.size(), 4);
  put_le(out, 16, lowered_name.size(), 4);
  put_le(out, 20, compressed_size, 4);
  put_le(out, 24, cubin.size(), 8);
  put_le(out, 32, checksum(out.data(), out.size()), 8);
  return out;
}

std::string parse_artifact_header(const uint8_t* data, size_t size, ArtifactView& view) {
  if (size < kArtifactHeaderSize) {
    return "the artifact is truncated (" + std::to_string(size) + " bytes, less than its header)";
  }
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    return "the bytes are not a cutlax.jit artifact (wrong magic)";
  }
  uint64_t version = get_le(data + 8, 4);
  if (version != kArtifactVersion) {
    return "the artifact has format version " + std::to_string(version) + "; this cutlax reads " +
           std::to_string(kArtifactVersion) + " (recompile the kernel)";
  }
  uint64_t arch_size = get_le(data + 12, 4), name_size = get_le(data + 16, 4);
  uint64_t compressed_size = get_le(data + 20, 4);
  uint64_t expected = kArtifactHeaderSize + arch_size + name_size + compressed_size;
  if (expected != size) {
    return "the artifact is " + std::to_string(size) + " bytes but its header describes " +
           std::to_string(expected) + " (truncated or corrupted)";
  }
  const char* payload = reinterpret_cast<const char*>(data + kArtifactHeaderSize);
  view.arch = std::string_view(payload, arch_size);
  view.lowered_name = std::string_view(payload + arch_size, name_size);
  view.compressed_cubin = data + kArtifactHeaderSize + arch_size + name_size;
  view.compressed_size = compressed_size;
  view.cubin_size = get_le(data + 24, 8);
  view.checksum = get_le(data + 32, 8);
  return {};
}

std::string parse_artifact(const uint8_t* data, size_t size, ArtifactView& view) {
  std::string problem = parse_artifact_header(data, size, view);
  if (!problem.empty()) return problem;
  if (checksum(data, size) != view.checksum) {
    return "the artifact's checksum does not match its contents (corrupted)";
  }
  return check_cubin_size(view);
}

std::string decompress_cubin(const ArtifactView& view, std::vector<uint8_t>& cubin) {
  // Again here: the view may come from parse_artifact_header alone.
  if (std::string problem = check_cubin_size(view); !problem.empty()) return problem;
  cubin.resize(view.cubin_size);
  uLongf size = view.cubin_size;
  int status = uncompress(cubin.data(), &size, view.compressed_cubin, view.compressed_size);
  if (status != Z_OK || size != view.cubin_size) {
    return "the artifact's CUBIN does not decompress (zlib status " + std::to_string(status) + ")";
  }
  return {};
}

}  // namespace cutlax::jit
