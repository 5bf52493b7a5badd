// A content fingerprint of include directories for the compile cache's key:
// every regular file under them, by relative path, size and modification
// time. Editing, adding or removing a header changes it, so no stale kernel
// is served from the disk cache. Each directory is walked once per process
// (CUTLASS's and the CUDA toolkit's headers, ~2800 files: ~10 ms), and one
// nested in another listed directory (cuda/include/cccl in cuda/include) is
// covered by the outer walk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cutlax::jit {

// Directories that cannot be read count as empty (their paths are in the
// key anyway, among the options).
uint64_t include_dirs_fingerprint(const std::vector<std::string>& dirs);

}  // namespace cutlax::jit
