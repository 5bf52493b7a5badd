// The artifact: what cutlax.jit.compile returns, the disk cache stores, and
// the FFI target receives as its `cubin` attribute. One self-describing,
// checksummed blob (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "cutlaxjt"
//        8     4  format version (kArtifactVersion)
//       12     4  length of the architecture name        (A)
//       16     4  length of the entry's lowered name     (N)
//       20     4  length of the zlib-compressed CUBIN    (Z)
//       24     8  length of the CUBIN once decompressed
//       32     8  checksum: hash64 of bytes 0-31 and of everything after 40
//       40     A  the architecture, e.g. "sm_90a"
//     40+A     N  the lowered (mangled) entry name
//   40+A+N     Z  the CUBIN, zlib-compressed (-default-device makes it mostly
//                 unused constexpr symbols: ~200 KB compresses to ~25 KB)
//
// Functions return an empty string on success, else what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cutlax::jit {

inline constexpr uint32_t kArtifactVersion = 1;
inline constexpr size_t kArtifactHeaderSize = 40;
// No CUBIN is anywhere near this; a larger claimed size is a damaged header.
inline constexpr uint64_t kMaxCubinSize = uint64_t{1} << 30;
// Deflate's best case is 1032 bytes out per byte in (258-byte matches coded
// in two bits), so Z compressed bytes never inflate to more than 1032 * Z.
inline constexpr uint64_t kMaxInflation = 1032;

// A parsed artifact, pointing into the caller's bytes.
struct ArtifactView {
  std::string_view arch;
  std::string_view lowered_name;
  const uint8_t* compressed_cubin = nullptr;
  size_t compressed_size = 0;
  uint64_t cubin_size = 0;
  uint64_t checksum = 0;
};

std::vector<uint8_t> encode_artifact(std::string_view arch, std::string_view lowered_name,
                                     const std::vector<uint8_t>& cubin);

// Checks the header (magic, version, lengths against the size): cheap, no
// pass over the payload.
std::string parse_artifact_header(const uint8_t* data, size_t size, ArtifactView& view);

// The header checks plus the checksum over the payload.
std::string parse_artifact(const uint8_t* data, size_t size, ArtifactView& view);

std::string decompress_cubin(const ArtifactView& view, std::vector<uint8_t>& cubin);

}  // namespace cutlax::jit
