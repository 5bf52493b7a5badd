#include "fingerprint.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "hash.hpp"

namespace cutlax::jit {
namespace {

// Appends (path, size, mtime) of every regular file under `dir_fd` to `out`,
// in sorted order so the result does not depend on readdir's order.
void walk(int dir_fd, const std::string& prefix, std::string& out) {
  DIR* listing = fdopendir(dir_fd);
  if (!listing) {
    close(dir_fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    struct stat info;
    // Symbolic links to directories are not followed (no cycles); links to
    // files are, so the target's edits count.
    if (fstatat(dirfd(listing), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      int child = openat(dirfd(listing), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (child >= 0) walk(child, prefix + name + "/", out);
      continue;
    }
    if (S_ISLNK(info.st_mode) && fstatat(dirfd(listing), name.c_str(), &info, 0) != 0) continue;
    if (!S_ISREG(info.st_mode)) continue;
    out += prefix;
    out += name;
    out.push_back('\0');
    const uint64_t fields[3] = {static_cast<uint64_t>(info.st_size),
                                static_cast<uint64_t>(info.st_mtim.tv_sec),
                                static_cast<uint64_t>(info.st_mtim.tv_nsec)};
    out.append(reinterpret_cast<const char*>(fields), sizeof(fields));
  }
  closedir(listing);  // closes dir_fd too
}

// The fingerprint of one directory tree, walked once per process.
uint64_t tree_fingerprint(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, uint64_t> computed;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = computed.find(dir);
    if (found != computed.end()) return found->second;
  }
  uint64_t fingerprint = 0;
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    std::string listing;
    walk(fd, "", listing);
    fingerprint = hash64(listing.data(), listing.size(), 0);
  }
  std::lock_guard<std::mutex> lock(mutex);
  computed.emplace(dir, fingerprint);
  return fingerprint;
}

}  // namespace

uint64_t include_dirs_fingerprint(const std::vector<std::string>& dirs) {
  std::vector<std::string> real;
  for (const std::string& dir : dirs) {
    char resolved[PATH_MAX];
    real.push_back(realpath(dir.c_str(), resolved) ? resolved : dir);
  }
  KeyBuilder key;
  for (size_t i = 0; i < real.size(); ++i) {
    bool nested = false;
    for (size_t j = 0; j < real.size() && !nested; ++j) {
      nested = j != i && real[i].size() > real[j].size() &&
               real[i].compare(0, real[j].size(), real[j]) == 0 && real[i][real[j].size()] == '/';
    }
    key.add(nested ? 0 : tree_fingerprint(real[i]));
  }
  return key.hash();
}

}  // namespace cutlax::jit
