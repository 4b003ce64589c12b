// Optional libraries loaded with dlopen (libcuda, NVRTC, cuDNN, NCCL, the MPI plugin): the
// opening and symbol lookup every loader shares, so each reports a missing library and a
// missing entry point the same way.
#pragma once

#include "support/Error.h"

#include <string>
#include <vector>

namespace kiln {

/// dlopen(path, RTLD_NOW and RTLD_GLOBAL or RTLD_LOCAL), or an Unavailable error whose
/// message is dlerror()'s text (it names the file).
Expected<void *> openSharedLibrary(const std::string &path, bool global = false);

/// dlsym: the address of `symbol` in `library`, or nullptr.
void *findSymbol(void *library, const char *symbol);

/// Sets `slot` to `symbol`'s address in `library`, as the slot's function pointer type;
/// appends the symbol's name to `missing` when the library lacks it.
template <typename Fn>
void resolveSymbol(void *library, const char *symbol, Fn &slot,
                   std::vector<std::string> &missing) {
  slot = reinterpret_cast<Fn>(findSymbol(library, symbol));
  if (!slot)
    missing.push_back(symbol);
}

} // namespace kiln
