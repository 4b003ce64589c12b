// dlopen and dlsym behind SharedLibrary.h.
#include "support/SharedLibrary.h"

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

} // namespace kiln
