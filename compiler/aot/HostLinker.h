// Linking a CPU bundle's object code into a shared object with lld (ld.lld-19).
#pragma once

#include "support/Error.h"

#include <string>
#include <string_view>

namespace kiln::compiler {

/// The linker linkSharedObject runs: $KILN_LLD when set (nothing else is
/// tried then), else ld.lld-19 or ld.lld on $PATH, else
/// /usr/lib/llvm-19/bin/ld.lld. Unavailable, naming what was tried, when none exists.
Expected<std::string> findLld();

/// `ld.lld -shared` of one relocatable object: an ELF shared object that
/// exports the object's functions and leaves its undefined symbols (kiln_rt's
/// kiln_cpu_* helpers, libm) to the process that loads it. The linker's
/// output is an error note when it fails; temporary files are always removed.
Expected<std::string> linkSharedObject(std::string_view object);

} // namespace kiln::compiler
