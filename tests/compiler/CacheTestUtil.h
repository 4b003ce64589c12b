// What the kernel cache tests look at on disk.
#pragma once

#include "runtime/cache/CacheDirectory.h"

#include <filesystem>
#include <vector>

namespace kiln::test {

/// The files in the entry directory of the cache rooted at `root` (none when it is missing).
inline std::vector<std::filesystem::path> cacheEntryFiles(const std::filesystem::path &root) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (std::filesystem::directory_iterator it(runtime::kernelEntryDirectory(root), error), end;
       !error && it != end; it.increment(error))
    files.push_back(it->path());
  return files;
}

} // namespace kiln::test
