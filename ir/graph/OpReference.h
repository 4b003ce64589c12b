// The op reference of docs/ir.md, generated from the op table so the docs
// cannot drift from the ops (a lit test diffs the two).
#pragma once

#include <string>

namespace kiln::ir {

/// Markdown describing every op in table order: name, category, operand
/// count, attributes (kind, default, doc) and the op's one-line doc.
std::string printOpReference();

} // namespace kiln::ir
