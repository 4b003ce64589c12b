// A symbolic plan's size symbols and size expressions in a bundle (docs/aot.md). An expression
// is stored as a postfix program over the plan's symbols, so decoding rebuilds it with the same
// checked arithmetic that built it and needs no parser.
#pragma once

#include "ir/graph/SizeExpr.h"
#include "runtime/bundle/ByteCodec.h"

#include <span>
#include <vector>

namespace kiln::runtime::bundle {

void writeSymbols(ByteWriter &out, std::span<const ir::SizeSymbol> symbols);
std::vector<ir::SizeSymbol> readSymbols(ByteReader &in);

/// `size` mentions only `symbols` (by name; a compiler error otherwise).
void writeSizeExpr(ByteWriter &out, const ir::SizeExpr &size,
                   std::span<const ir::SizeSymbol> symbols);
/// A malformed program (an unknown operation or symbol, too few or too many operands, an
/// overflow) fails `in`.
ir::SizeExpr readSizeExpr(ByteReader &in, std::span<const ir::SizeSymbol> symbols);

} // namespace kiln::runtime::bundle
