// A function pointer from a dlopen'd library, with an error naming the library and symbol.
#pragma once

#include "support/Error.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <string>
#include <type_traits>

namespace kiln::bench {

template <typename Slot>
Expected<void> resolveSymbol(void *library, const std::string &libraryName, const char *symbol,
                             Slot &slot) {
  void *address = dlsym(library, symbol);
  if (!address)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} has no symbol {}", libraryName, symbol));
  slot = reinterpret_cast<std::remove_reference_t<Slot>>(address);
  return {};
}

} // namespace kiln::bench
