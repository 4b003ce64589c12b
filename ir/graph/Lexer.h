// The lexer of the graph IR's text form: turns text into tokens that carry
// their line and column, so every parse error can point at the offending token.
#pragma once

#include "ir/graph/Identifier.h"
#include "support/Error.h"
#include "support/TextCursor.h"

#include <string>
#include <string_view>

namespace kiln::ir {

enum class TokenKind : uint8_t {
  EndOfInput,
  Identifier, ///< [A-Za-z_][A-Za-z0-9_.]*: keywords, op names, dtypes, true/false, inf/nan.
  ValueName,  ///< %name or %N; `text` holds what follows the '%'.
  GraphName,  ///< @name or @"any string"; `text` holds the name.
  Integer,    ///< -?[0-9]+
  Float,      ///< -?[0-9]+ with a fraction and/or an exponent, or -inf / -nan.
  String,     ///< "..." with escapes; `text` holds the decoded value.
  LeftBrace,
  RightBrace,
  LeftParen,
  RightParen,
  LeftBracket,
  RightBracket,
  Comma,
  Colon,
  Equals,
  Plus,  ///< '+', '-', '*', '/': the operators of size expressions (SizeExprParser.h).
  Minus, ///< A '-' not starting a number.
  Star,
  Slash,
};

/// One token. `spelling` views the source text; `text` is the decoded value of
/// strings and names.
struct Token {
  TokenKind kind = TokenKind::EndOfInput;
  std::string_view spelling;
  std::string text;
  unsigned line = 0;
  unsigned column = 0;
};

/// How a token reads in an error message: "'%3'", "end of input".
std::string describeToken(const Token &token);

/// Splits IR text into tokens. Whitespace and `//` comments separate tokens.
class Lexer : TextCursor {
public:
  /// `firstLine` is the line number of the text's first line, so a chunk of a
  /// larger file reports lines of that file.
  Lexer(std::string_view text, std::string fileName, unsigned firstLine = 1);

  /// The next token, or a ParseError for text that is no token.
  Expected<Token> next();

  /// Location of a line and column in this lexer's file.
  Location locationOf(unsigned line, unsigned column) const {
    return Location{fileName_, line, column};
  }

private:
  std::unexpected<Error> errorHere(unsigned line, unsigned column, std::string message) const;
  Expected<Token> lexNumber(Token token);
  Expected<Token> lexString(Token token);
  Expected<Token> lexName(Token token, TokenKind kind, char sigil);

  std::string fileName_;
};

} // namespace kiln::ir
