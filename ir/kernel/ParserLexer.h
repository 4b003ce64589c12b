// The tokens of kernel IR's text form (docs/kernel-ir.md): its operators and
// its typed literals (3i32, 1.5f32x4, -inff32) differ from the graph IR's, so
// it has a small lexer of its own. Every token carries its line and column.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::kir::text {

enum class TokenKind : uint8_t {
  EndOfInput,
  Identifier, ///< [A-Za-z_][A-Za-z0-9_.]*: names, keywords, dtypes, true/inff32/mma.f16.m16n8k16
  Number,     ///< digits, an optional fraction and exponent, then a suffix ([A-Za-z0-9_]*)
  Punct,      ///< ( ) [ ] { } , : = += == != < <= > >= + - * / % ! && || & |
};

struct Token {
  TokenKind kind = TokenKind::EndOfInput;
  std::string_view spelling; ///< the token's text in the source
  /// Numbers: the numeric part ("1.5", "1e+20") and the suffix after it ("f32x4", "").
  std::string_view number, suffix;
  unsigned line = 0;
  unsigned column = 0;

  bool is(std::string_view text) const {
    return kind != TokenKind::EndOfInput && kind != TokenKind::Number && spelling == text;
  }
};

/// How a token reads in an error message: "'load'", "end of input".
std::string describeToken(const Token &token);

/// Splits the whole of `text` into tokens (the last one EndOfInput), or a ParseError at the
/// first character that starts no token. Whitespace and `//` comments separate tokens.
/// `firstLine` numbers the text's first line, so a chunk of a larger file reports that file's
/// lines.
Expected<std::vector<Token>> tokenize(std::string_view text, const std::string &fileName,
                                      unsigned firstLine = 1);

} // namespace kiln::kir::text
