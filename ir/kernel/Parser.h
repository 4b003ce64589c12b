// The parser of kernel IR's text form (grammar in docs/kernel-ir.md): it reads
// exactly what printKernel prints, so printKernel(parseKernel(printKernel(k))) ==
// printKernel(k), and lets kernel passes be tested from text (kiln-opt, lit).
#pragma once

#include "ir/kernel/KernelIR.h"

#include "support/Error.h"

#include <string_view>
#include <vector>

namespace kiln::kir {

/// Parses one `kernel name(params) { ... }` (comments and blank lines around it allowed).
/// Every node is type-checked as it is built, so malformed text is a ParseError at
/// file:line:column of the offending token, naming what was expected and what was found,
/// never an assertion. `firstLine` numbers the text's first line, so a chunk cut out of a
/// larger file reports that file's lines.
Expected<Kernel> parseKernel(std::string_view text, std::string_view sourceName = "<input>",
                             unsigned firstLine = 1);

/// Parses every kernel of a text holding one or more, in order (none is an error).
Expected<std::vector<Kernel>> parseKernels(std::string_view text,
                                           std::string_view sourceName = "<input>",
                                           unsigned firstLine = 1);

} // namespace kiln::kir
