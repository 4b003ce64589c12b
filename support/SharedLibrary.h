// Optional libraries loaded with dlopen (libcuda, NVRTC, cuDNN, NCCL, the MPI plugin): the
// opening and symbol lookup every loader shares, so each reports a missing library and a
// missing entry point the same way.
#pragma once

#include "support/Error.h"

#include <functional>
#include <string>
#include <string_view>
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

/// How a loader names an optional library in its errors.
struct LibraryDescription {
  std::string_view name;      ///< "cuDNN"
  std::string_view soname;    ///< "libcudnn.so.9"
  std::string_view envVar;    ///< "KILN_CUDNN": a path that replaces the search
  std::string_view neededFor; ///< a note: what kiln needs it for
  std::string_view install;   ///< "cuDNN 9": what to install
};

/// The error when no candidate was usable: one sentence naming the library and either the
/// forced path (`forced`: the candidates are $envVar alone) or every path tried, each
/// candidate's reason as a note, then what it is needed for and how to get it.
Error unavailableLibrary(const LibraryDescription &library,
                         const std::vector<std::string> &candidates,
                         const std::vector<std::string> &reasons, bool forced);

/// The first of `candidates` that `open` accepts, else unavailableLibrary's error.
template <typename T>
Expected<T> openFirstUsable(const LibraryDescription &library,
                            const std::vector<std::string> &candidates, bool forced,
                            const std::function<Expected<T>(const std::string &)> &open) {
  std::vector<std::string> reasons;
  for (const std::string &path : candidates) {
    auto opened = open(path);
    if (opened)
      return opened;
    reasons.push_back(opened.error().message());
  }
  return std::unexpected(unavailableLibrary(library, candidates, reasons, forced));
}

} // namespace kiln
