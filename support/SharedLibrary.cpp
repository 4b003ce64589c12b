// dlopen and dlsym behind SharedLibrary.h.
#include "support/SharedLibrary.h"

#include <fmt/format.h>

#include <dlfcn.h>

namespace kiln {

Expected<void *> openSharedLibrary(const std::string &path, bool global) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (handle)
    return handle;
  const char *why = dlerror();
  return makeError(ErrorCode::Unavailable, why ? std::string(why) : path + ": cannot open");
}

void *findSymbol(void *library, const char *symbol) { return dlsym(library, symbol); }

Error unavailableLibrary(const LibraryDescription &library,
                         const std::vector<std::string> &candidates,
                         const std::vector<std::string> &reasons, bool forced) {
  Error error(ErrorCode::Unavailable,
              forced ? fmt::format("{} is unavailable: {}={}: {}", library.name, library.envVar,
                                   candidates.front(), reasons.front())
                     : fmt::format("{} is unavailable: {} was not found or not usable (tried {})",
                                   library.name, library.soname, fmt::join(candidates, ", ")));
  if (!forced)
    for (const std::string &reason : reasons)
      error.withNote(reason);
  error.withNote(std::string(library.neededFor));
  error.withNote(forced ? fmt::format("unset {} to search the usual places for {}",
                                      library.envVar, library.soname)
                        : fmt::format("install {}, or set {} to the path of {}", library.install,
                                      library.envVar, library.soname));
  return error;
}

} // namespace kiln
