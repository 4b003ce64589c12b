// Reading a SizeExpr from graph IR tokens, shared by the graph parser (shapes,
// attributes) and parseSizeExpr (text from the DSL and tests).
#pragma once

#include "ir/graph/Lexer.h"
#include "ir/graph/SizeExpr.h"

namespace kiln::ir {

/// Parses one size expression that starts at `token`, reading more tokens from
/// `lexer`; on return `token` is the first token after the expression. Grammar:
///   sum     := ['-'] product (('+' | '-') product)*
///   product := factor (('*' factor) | ('/' integer))*
///   factor  := integer | symbol | '(' sum ')'
/// '/' is floor division by a positive integer. Symbols must be declared (`lookup`).
Expected<SizeExpr> parseSizeExprTokens(Lexer &lexer, Token &token, const SymbolLookup &lookup);

} // namespace kiln::ir
