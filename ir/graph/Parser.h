// The parser of the graph IR's text form (grammar in docs/ir.md): text in,
// a verified-by-construction Graph out, or an error at the offending token.
#pragma once

#include "ir/graph/Graph.h"

#include <cstdint>
#include <memory>
#include <string_view>

namespace kiln::ir {

/// The largest IR text file kiln reads (1 GiB, far beyond any real model).
inline constexpr uint64_t kMaxIrTextBytes = uint64_t{1} << 30;

/// Parses one `graph @name { ... }`. Builds the graph through the Graph API,
/// so attributes are checked and normalized and every result type is
/// inferred; a written result type must equal the inferred one. Every error is
/// a ParseError located at file:line:column of the offending token (errors
/// from shape inference point at the node's op name). Nodes carry the location
/// of their op name. `firstLine` numbers the text's first line, so a chunk cut
/// out of a larger file reports that file's lines.
Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text,
                                            std::string_view fileName = "<input>",
                                            unsigned firstLine = 1);

} // namespace kiln::ir
