// The size expression grammar of SizeExprParser.h over the graph IR's tokens.
#include "ir/graph/SizeExprParser.h"

#include <charconv>
#include <fmt/format.h>

namespace kiln::ir {

namespace {

class SizeExprParser {
public:
  SizeExprParser(Lexer &lexer, Token &token, const SymbolLookup &lookup)
      : lexer_(lexer), token_(token), lookup_(lookup) {}

  Expected<SizeExpr> parseSum() {
    bool negate = token_.kind == TokenKind::Minus;
    if (negate)
      KILN_TRY_VOID(advance());
    KILN_TRY(SizeExpr sum, parseProduct());
    if (negate) {
      KILN_TRY(sum, at(multiply(sum, SizeExpr(-1))));
    }
    while (true) {
      if (token_.kind == TokenKind::Plus || token_.kind == TokenKind::Minus) {
        bool minus = token_.kind == TokenKind::Minus;
        KILN_TRY_VOID(advance());
        KILN_TRY(SizeExpr next, parseProduct());
        KILN_TRY(sum, at(minus ? subtract(sum, next) : add(sum, next)));
      } else if (token_.kind == TokenKind::Integer && token_.spelling.starts_with('-')) {
        // "N-3" lexes as N and the integer -3: a subtraction of a product.
        KILN_TRY(SizeExpr next, parseProduct());
        KILN_TRY(sum, at(add(sum, next)));
      } else {
        return sum;
      }
    }
  }

private:
  Expected<SizeExpr> parseProduct() {
    KILN_TRY(SizeExpr product, parseFactor());
    while (token_.kind == TokenKind::Star || token_.kind == TokenKind::Slash) {
      bool divide = token_.kind == TokenKind::Slash;
      KILN_TRY_VOID(advance());
      if (divide) {
        if (token_.kind != TokenKind::Integer || token_.spelling.starts_with('-') ||
            token_.spelling == "0")
          return fail(fmt::format("a size divides only by a positive integer (floor division), "
                                  "got {}",
                                  describeToken(token_)));
        KILN_TRY(int64_t divisor, integer());
        KILN_TRY_VOID(advance());
        KILN_TRY(product, at(floorDiv(product, divisor)));
      } else {
        KILN_TRY(SizeExpr factor, parseFactor());
        KILN_TRY(product, at(multiply(product, factor)));
      }
    }
    return product;
  }

  Expected<SizeExpr> parseFactor() {
    if (token_.kind == TokenKind::Integer) {
      KILN_TRY(int64_t value, integer());
      KILN_TRY_VOID(advance());
      return SizeExpr(value);
    }
    if (token_.kind == TokenKind::Identifier) {
      std::optional<SizeSymbol> symbol = lookup_(token_.spelling);
      if (!symbol)
        return fail(fmt::format("undeclared size symbol '{}' (declare it in the graph header, "
                                "e.g. graph @g({} in [1, 64]))",
                                token_.spelling, token_.spelling));
      KILN_TRY_VOID(advance());
      return SizeExpr::symbol(*symbol);
    }
    if (token_.kind == TokenKind::LeftParen) {
      KILN_TRY_VOID(advance());
      KILN_TRY(SizeExpr inner, parseSum());
      if (token_.kind != TokenKind::RightParen)
        return fail("expected ')' in a size expression, got " + describeToken(token_));
      KILN_TRY_VOID(advance());
      return inner;
    }
    return fail("expected a size (an integer, a size symbol or '('), got " +
                describeToken(token_));
  }

  Expected<int64_t> integer() const {
    int64_t value = 0;
    std::string_view text = token_.spelling;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      return fail(fmt::format("integer {} does not fit in 64 bits", text));
    return value;
  }

  Expected<void> advance() {
    KILN_TRY(token_, lexer_.next());
    return {};
  }

  std::unexpected<Error> fail(std::string message) const {
    return makeError(ErrorCode::ParseError, std::move(message),
                     lexer_.locationOf(token_.line, token_.column));
  }

  // Arithmetic errors (overflow) become parse errors at the current token.
  Expected<SizeExpr> at(Expected<SizeExpr> result) const {
    if (!result)
      return fail(result.error().message());
    return result;
  }

  Lexer &lexer_;
  Token &token_;
  const SymbolLookup &lookup_;
};

} // namespace

Expected<SizeExpr> parseSizeExprTokens(Lexer &lexer, Token &token, const SymbolLookup &lookup) {
  return SizeExprParser(lexer, token, lookup).parseSum();
}

Expected<SizeExpr> parseSizeExpr(std::string_view text, const SymbolLookup &lookup) {
  Lexer lexer(text, "<size>");
  KILN_TRY(Token token, lexer.next());
  KILN_TRY(SizeExpr expr, parseSizeExprTokens(lexer, token, lookup));
  if (token.kind != TokenKind::EndOfInput)
    return makeError(ErrorCode::ParseError,
                     fmt::format("unexpected {} after the size {}", describeToken(token),
                                 expr.str()),
                     lexer.locationOf(token.line, token.column));
  return expr;
}

} // namespace kiln::ir
