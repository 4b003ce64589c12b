// Tokenizing kernel IR text; see docs/kernel-ir.md for the grammar.
#include "ir/kernel/ParserLexer.h"

#include "support/TextCursor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace kiln::kir::text {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isLetter(c) || isDigit(c) || c == '.'; }

// Longest first, so "<=" is not read as "<" then "=".
// An atomic's "<-" is two tokens, so "a<-1" still reads as a comparison.
constexpr std::array<std::string_view, 7> kTwoCharPuncts = {"+=", "==", "!=", "<=",
                                                            ">=", "&&", "||"};
constexpr std::string_view kOneCharPuncts = "()[]{},:=<>+-*/%!&|";

class Lexer : TextCursor {
public:
  Lexer(std::string_view text, const std::string &fileName, unsigned firstLine)
      : TextCursor(text, firstLine), fileName_(fileName) {}

  Expected<std::vector<Token>> run() {
    std::vector<Token> tokens;
    while (true) {
      skipWhitespaceAndComments();
      Token token;
      token.line = line_;
      token.column = column_;
      if (pos_ >= text_.size()) {
        tokens.push_back(token);
        return tokens;
      }
      size_t start = pos_;
      char c = text_[pos_];
      if (isLetter(c)) {
        token.kind = TokenKind::Identifier;
        while (pos_ < text_.size() && isNameChar(text_[pos_]))
          advance();
      } else if (isDigit(c)) {
        token.kind = TokenKind::Number;
        lexNumber(token);
      } else if (std::string_view two = text_.substr(pos_, 2);
                 std::ranges::find(kTwoCharPuncts, two) != kTwoCharPuncts.end()) {
        token.kind = TokenKind::Punct;
        advance(2);
      } else if (kOneCharPuncts.find(c) != std::string_view::npos) {
        token.kind = TokenKind::Punct;
        advance();
      } else {
        return makeError(ErrorCode::ParseError,
                         fmt::format("unexpected character '{}'", printableChar(c)),
                         Location{fileName_, token.line, token.column});
      }
      token.spelling = text_.substr(start, pos_ - start);
      if (token.kind == TokenKind::Number)
        token.suffix = token.spelling.substr(token.number.size());
      tokens.push_back(token);
    }
  }

private:
  /// digits ['.' digits] [('e'|'E') ['+'|'-'] digits], then the suffix: a dtype, a vector
  /// type, "B" (128B) or nothing.
  void lexNumber(Token &token) {
    size_t start = pos_;
    while (isDigit(peek()))
      advance();
    if (peek() == '.' && isDigit(peek(1))) {
      advance();
      while (isDigit(peek()))
        advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      advance(2);
      while (isDigit(peek()))
        advance();
    }
    token.number = text_.substr(start, pos_ - start);
    while (isLetter(peek()) || isDigit(peek()))
      advance();
  }

  const std::string &fileName_;
};

} // namespace

std::string describeToken(const Token &token) {
  return token.kind == TokenKind::EndOfInput ? "end of input" : quotedSpelling(token.spelling);
}

Expected<std::vector<Token>> tokenize(std::string_view text, const std::string &fileName,
                                      unsigned firstLine) {
  return Lexer(text, fileName, firstLine).run();
}

} // namespace kiln::kir::text
