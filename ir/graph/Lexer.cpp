// Tokenizing the graph IR's text form; see docs/ir.md for the grammar.
#include "ir/graph/Lexer.h"

#include <fmt/format.h>

namespace kiln::ir {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::string describeToken(const Token &token) {
  return token.kind == TokenKind::EndOfInput ? "end of input" : quotedSpelling(token.spelling);
}

Lexer::Lexer(std::string_view text, std::string fileName, unsigned firstLine)
    : TextCursor(text, firstLine), fileName_(std::move(fileName)) {}

std::unexpected<Error> Lexer::errorHere(unsigned line, unsigned column, std::string message) const {
  return makeError(ErrorCode::ParseError, std::move(message), locationOf(line, column));
}

Expected<Token> Lexer::next() {
  skipWhitespaceAndComments();
  Token token;
  token.line = line_;
  token.column = column_;
  if (pos_ >= text_.size()) {
    token.kind = TokenKind::EndOfInput;
    return token;
  }
  char c = text_[pos_];
  auto single = [&](TokenKind kind) -> Expected<Token> {
    token.kind = kind;
    token.spelling = text_.substr(pos_, 1);
    advance();
    return token;
  };
  switch (c) {
  case '{': return single(TokenKind::LeftBrace);
  case '}': return single(TokenKind::RightBrace);
  case '(': return single(TokenKind::LeftParen);
  case ')': return single(TokenKind::RightParen);
  case '[': return single(TokenKind::LeftBracket);
  case ']': return single(TokenKind::RightBracket);
  case ',': return single(TokenKind::Comma);
  case ':': return single(TokenKind::Colon);
  case '=': return single(TokenKind::Equals);
  case '"': return lexString(std::move(token));
  case '%': return lexName(std::move(token), TokenKind::ValueName, '%');
  case '@': return lexName(std::move(token), TokenKind::GraphName, '@');
  case '+': return single(TokenKind::Plus);
  case '*': return single(TokenKind::Star);
  case '/': return single(TokenKind::Slash); // "//" was skipped as a comment
  default: break;
  }
  if (isDigit(c) || c == '-')
    return lexNumber(std::move(token));
  if (isIdentifierStart(c)) {
    size_t start = pos_;
    while (pos_ < text_.size() && isIdentifierChar(text_[pos_]))
      advance();
    token.kind = TokenKind::Identifier;
    token.spelling = text_.substr(start, pos_ - start);
    token.text = std::string(token.spelling);
    return token;
  }
  return errorHere(line_, column_, fmt::format("unexpected character '{}'", printableChar(c)));
}

Expected<Token> Lexer::lexNumber(Token token) {
  size_t start = pos_;
  if (peek() == '-') {
    advance();
    // -inf and -nan are float literals; any other '-' not before a digit is a minus.
    for (std::string_view word : {"inf", "nan"}) {
      if (text_.substr(pos_, 3) == word && !isIdentifierChar(peek(3))) {
        advance(3);
        token.kind = TokenKind::Float;
        token.spelling = text_.substr(start, pos_ - start);
        return token;
      }
    }
    if (!isDigit(peek())) {
      token.kind = TokenKind::Minus;
      token.spelling = text_.substr(start, 1);
      return token;
    }
  }
  token.kind = TokenKind::Integer;
  while (isDigit(peek()))
    advance();
  if (peek() == '.') {
    advance();
    if (!isDigit(peek()))
      return errorHere(line_, column_, "expected a digit after '.' in a number");
    while (isDigit(peek()))
      advance();
    token.kind = TokenKind::Float;
  }
  if (peek() == 'e' || peek() == 'E') {
    advance();
    if (peek() == '+' || peek() == '-')
      advance();
    if (!isDigit(peek()))
      return errorHere(line_, column_, "expected a digit in the exponent of a number");
    while (isDigit(peek()))
      advance();
    token.kind = TokenKind::Float;
  }
  if (isIdentifierChar(peek()))
    return errorHere(line_, column_,
                     fmt::format("unexpected character '{}' after number '{}'",
                                 printableChar(peek()), text_.substr(start, pos_ - start)));
  token.spelling = text_.substr(start, pos_ - start);
  return token;
}

Expected<Token> Lexer::lexString(Token token) {
  size_t start = pos_;
  advance(); // opening quote
  std::string value;
  while (true) {
    if (pos_ >= text_.size() || peek() == '\n')
      return errorHere(token.line, token.column, "unterminated string");
    char c = peek();
    if (c == '"') {
      advance();
      break;
    }
    if (c == '\\') {
      unsigned escapeColumn = column_;
      char kind = peek(1);
      if (kind == '"' || kind == '\\') {
        value += kind;
        advance(2);
      } else if (kind == 'n') {
        value += '\n';
        advance(2);
      } else if (kind == 't') {
        value += '\t';
        advance(2);
      } else if (kind == 'x') {
        int high = hexValue(peek(2)), low = hexValue(peek(3));
        if (high < 0 || low < 0)
          return errorHere(line_, escapeColumn, "expected two hex digits after '\\x' in string");
        value += static_cast<char>(high * 16 + low);
        advance(4);
      } else {
        if (kind == '\0' && pos_ + 1 >= text_.size())
          return errorHere(token.line, token.column, "unterminated string");
        return errorHere(line_, escapeColumn,
                         fmt::format("unknown escape '\\{}' in string (known: \\\" \\\\ \\n \\t "
                                     "\\xHH)",
                                     printableChar(kind)));
      }
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20)
      return errorHere(line_, column_,
                       fmt::format("control character '{}' in string; write it as an escape",
                                   printableChar(c)));
    value += c;
    advance();
  }
  token.kind = TokenKind::String;
  token.spelling = text_.substr(start, pos_ - start);
  token.text = std::move(value);
  return token;
}

Expected<Token> Lexer::lexName(Token token, TokenKind kind, char sigil) {
  size_t start = pos_;
  advance(); // the sigil
  if (sigil == '@' && peek() == '"') {
    Token quoted;
    quoted.line = line_;
    quoted.column = column_;
    KILN_TRY(Token name, lexString(std::move(quoted)));
    token.text = std::move(name.text);
  } else if (isDigit(peek())) {
    size_t digits = pos_;
    while (isDigit(peek()))
      advance();
    if (isIdentifierChar(peek()))
      return errorHere(token.line, token.column,
                       fmt::format("invalid name '{}': a name is a number or starts with a "
                                   "letter or '_'",
                                   text_.substr(start, pos_ + 1 - start)));
    token.text = std::string(text_.substr(digits, pos_ - digits));
  } else if (isIdentifierStart(peek())) {
    size_t name = pos_;
    while (isIdentifierChar(peek()))
      advance();
    token.text = std::string(text_.substr(name, pos_ - name));
  } else {
    return errorHere(token.line, token.column,
                     fmt::format("expected a name after '{}'{}", sigil,
                                 sigil == '@' ? " (an identifier or a string)"
                                              : " (an identifier or a number)"));
  }
  token.kind = kind;
  token.spelling = text_.substr(start, pos_ - start);
  return token;
}

} // namespace kiln::ir
