// Parsing the graph IR's text form into a Graph, with errors that say what was
// expected and point at the offending token. Grammar: docs/ir.md.
#include "ir/graph/Parser.h"

#include "ir/graph/Lexer.h"
#include "ir/graph/SizeExprParser.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <unordered_map>

namespace kiln::ir {

namespace {

// The parser checks kMaxElements (TensorType.h) dimension by dimension so the
// error points at the dimension that breaks it; the rule is checkedNumElements'.

std::string kindPhrase(AttrKind kind) {
  switch (kind) {
  case AttrKind::Ints:
  case AttrKind::Floats:
  case AttrKind::Sizes: return std::string(attrKindName(kind));
  case AttrKind::Int: return "an int";
  default: return "a " + std::string(attrKindName(kind));
  }
}

std::string knownDTypes() {
  std::string out;
  for (int i = 0; i < kNumDTypes; ++i)
    out += (i == 0 ? "" : ", ") + std::string(dtypeName(static_cast<DType>(i)));
  return out;
}

// Where a value was defined, for "redefinition" notes.
struct Definition {
  Value *value;
  Location location;
};

class Parser {
public:
  Parser(std::string_view text, std::string fileName, unsigned firstLine)
      : lexer_(text, std::move(fileName), firstLine) {}

  Expected<std::unique_ptr<Graph>> parse() {
    KILN_TRY_VOID(advance());
    if (!isKeyword("graph"))
      return fail(token_, "expected 'graph' at the start of the input, got " + describe(token_));
    KILN_TRY_VOID(advance());
    if (token_.kind != TokenKind::GraphName)
      return fail(token_, "expected a graph name such as @main after 'graph', got " +
                              describe(token_));
    graph_ = std::make_unique<Graph>(token_.text);
    KILN_TRY_VOID(advance());
    if (token_.kind == TokenKind::LeftParen)
      KILN_TRY_VOID(parseSymbolDeclarations());
    KILN_TRY_VOID(expect(TokenKind::LeftBrace, "'{' after the graph name"));
    while (token_.kind != TokenKind::RightBrace)
      KILN_TRY_VOID(parseStatement());
    KILN_TRY_VOID(advance());
    if (token_.kind != TokenKind::EndOfInput)
      return fail(token_, "expected end of input after the graph's closing '}', got " +
                              describe(token_));
    return std::move(graph_);
  }

private:
  // ---- Tokens and errors ------------------------------------------------------------------------

  Expected<void> advance() {
    KILN_TRY(token_, lexer_.next());
    return {};
  }

  bool isKeyword(std::string_view word) const {
    return token_.kind == TokenKind::Identifier && token_.spelling == word;
  }

  Location locationOf(const Token &token) const {
    return lexer_.locationOf(token.line, token.column);
  }

  static std::string describe(const Token &token) { return describeToken(token); }

  std::unexpected<Error> fail(const Token &token, std::string message) const {
    return makeError(ErrorCode::ParseError, std::move(message), locationOf(token));
  }

  // Errors from the Graph API become parse errors at `token`, keeping notes.
  std::unexpected<Error> failWith(const Token &token, const Error &error) const {
    Error out(ErrorCode::ParseError, error.message(), locationOf(token));
    for (const std::string &note : error.notes())
      out.withNote(note);
    return std::unexpected(std::move(out));
  }

  /// Consumes a token of `kind`, or fails with "expected <what>, got ...".
  Expected<void> expect(TokenKind kind, std::string_view what) {
    if (token_.kind != kind)
      return fail(token_, fmt::format("expected {}, got {}", what, describe(token_)));
    return advance();
  }

  // ---- Size symbols ----------------------------------------------------------------------------

  // '(' name 'in' '[' min ',' max ']' (',' ...)* ')'
  Expected<void> parseSymbolDeclarations() {
    KILN_TRY_VOID(advance()); // '('
    while (true) {
      if (token_.kind != TokenKind::Identifier)
        return fail(token_, "expected a size symbol such as N in [1, 256], got " +
                                describe(token_));
      Token name = token_;
      KILN_TRY_VOID(advance());
      if (!isKeyword("in"))
        return fail(token_, fmt::format("expected 'in' after the size symbol {}, got {}",
                                        name.spelling, describe(token_)));
      KILN_TRY_VOID(advance());
      KILN_TRY_VOID(expect(TokenKind::LeftBracket,
                           fmt::format("'[' starting the range of {}", name.spelling)));
      KILN_TRY(int64_t min, parseRangeBound(name));
      KILN_TRY_VOID(expect(TokenKind::Comma, fmt::format("',' in the range of {}", name.spelling)));
      KILN_TRY(int64_t max, parseRangeBound(name));
      KILN_TRY_VOID(expect(TokenKind::RightBracket,
                           fmt::format("']' ending the range of {}", name.spelling)));
      auto declared = graph_->declareSymbol(SizeSymbol{name.text.empty() ? std::string(name.spelling)
                                                                         : name.text,
                                                       min, max});
      if (!declared)
        return failWith(name, declared.error());
      if (token_.kind == TokenKind::RightParen)
        return advance();
      if (token_.kind != TokenKind::Comma)
        return fail(token_, "expected ',' or ')' after a size symbol's range, got " +
                                describe(token_));
      KILN_TRY_VOID(advance());
    }
  }

  Expected<int64_t> parseRangeBound(const Token &name) {
    if (token_.kind != TokenKind::Integer)
      return fail(token_, fmt::format("expected an integer bound in the range of {}, got {}",
                                      name.spelling, describe(token_)));
    KILN_TRY(int64_t value, parseInt());
    KILN_TRY_VOID(advance());
    return value;
  }

  SymbolLookup symbolLookup() const {
    return [this](std::string_view name) -> std::optional<SizeSymbol> {
      const SizeSymbol *symbol = graph_->findSymbol(name);
      return symbol ? std::optional<SizeSymbol>(*symbol) : std::nullopt;
    };
  }

  /// One size expression (a symbolic dim or a `sizes` entry).
  Expected<SizeExpr> parseSize() { return parseSizeExprTokens(lexer_, token_, symbolLookup()); }

  // ---- Statements -------------------------------------------------------------------------------

  Expected<void> parseStatement() {
    if (isKeyword("input") || isKeyword("param"))
      return parseLeaf();
    if (isKeyword("output"))
      return parseOutput();
    if (token_.kind == TokenKind::ValueName)
      return parseNode();
    return fail(token_, "expected 'input', 'param', 'output', a value definition such as "
                        "%0 or '}', got " +
                            describe(token_));
  }

  // input %name: type | param %name: type
  Expected<void> parseLeaf() {
    bool isInput = token_.spelling == "input";
    std::string keyword(token_.spelling);
    KILN_TRY_VOID(advance());
    if (token_.kind != TokenKind::ValueName || !isIdentifier(token_.text))
      return fail(token_, fmt::format("expected {} name such as %x after '{}', got {}",
                                      isInput ? "an input" : "a parameter", keyword,
                                      describe(token_)));
    Token name = token_;
    KILN_TRY_VOID(checkNotDefined(name));
    KILN_TRY_VOID(advance());
    KILN_TRY_VOID(expect(TokenKind::Colon, fmt::format("':' after {}", name.spelling)));
    KILN_TRY(TensorType type, parseType());
    auto value = isInput ? graph_->addInput(name.text, std::move(type))
                         : graph_->addParam(name.text, std::move(type));
    if (!value)
      return failWith(name, value.error());
    define(name, *value);
    return {};
  }

  // output "name" = %value
  Expected<void> parseOutput() {
    KILN_TRY_VOID(advance());
    if (token_.kind != TokenKind::String)
      return fail(token_, "expected an output name string such as \"out\" after 'output', got " +
                              describe(token_));
    Token name = token_;
    KILN_TRY_VOID(advance());
    KILN_TRY_VOID(expect(TokenKind::Equals, "'=' after the output name"));
    KILN_TRY(Value * value, parseUse("a value such as %0 after '='"));
    auto added = graph_->addOutput(name.text, value);
    if (!added)
      return failWith(name, added.error());
    return {};
  }

  // %name: type = op(%a, %b) {attr = value, ...}
  Expected<void> parseNode() {
    Token name = token_;
    KILN_TRY_VOID(checkNotDefined(name));
    KILN_TRY_VOID(advance());
    KILN_TRY_VOID(expect(TokenKind::Colon, fmt::format("':' after {}", name.spelling)));
    Token typeToken = token_;
    KILN_TRY(TensorType declared, parseType());
    KILN_TRY_VOID(expect(TokenKind::Equals, "'=' after the result type"));
    if (token_.kind != TokenKind::Identifier)
      return fail(token_, "expected an op name after '=', got " + describe(token_));
    Token opToken = token_;
    std::optional<OpKind> kind = opKindFromName(opToken.spelling);
    if (!kind)
      return fail(opToken, fmt::format("unknown op '{}'", opToken.spelling));
    const OpInfo &info = opInfo(*kind);
    KILN_TRY_VOID(advance());
    KILN_TRY_VOID(expect(TokenKind::LeftParen, fmt::format("'(' after '{}'", info.name)));
    std::vector<Value *> operands;
    if (token_.kind != TokenKind::RightParen) {
      if (token_.kind != TokenKind::ValueName)
        return fail(token_, "expected an operand or ')', got " + describe(token_));
      while (true) {
        KILN_TRY(Value * operand, parseUse("an operand after ','"));
        operands.push_back(operand);
        if (token_.kind == TokenKind::RightParen)
          break;
        if (token_.kind != TokenKind::Comma)
          return fail(token_, "expected ',' or ')' after operand, got " + describe(token_));
        KILN_TRY_VOID(advance());
      }
    }
    KILN_TRY_VOID(advance()); // ')'
    AttrMap attrs;
    if (token_.kind == TokenKind::LeftBrace) {
      KILN_TRY(attrs, parseAttrDict(info));
    }
    auto result = graph_->addNode(*kind, std::move(operands), std::move(attrs),
                                  locationOf(opToken));
    if (!result)
      return failWith(opToken, result.error());
    if ((*result)->type() != declared)
      return fail(typeToken, fmt::format("declared type {} but {} infers {}", declared.str(),
                                         info.name, (*result)->type().str()));
    define(name, *result);
    return {};
  }

  // ---- Values -----------------------------------------------------------------------------------

  Expected<void> checkNotDefined(const Token &name) const {
    auto it = values_.find(name.text);
    if (it == values_.end())
      return {};
    Error error(ErrorCode::ParseError, fmt::format("redefinition of value {}", name.spelling),
                locationOf(name));
    error.withNote("previous definition is at " + it->second.location.str());
    return std::unexpected(std::move(error));
  }

  void define(const Token &name, Value *value) {
    values_.emplace(name.text, Definition{value, locationOf(name)});
  }

  /// A use of a defined value; `what` describes what was expected.
  Expected<Value *> parseUse(std::string_view what) {
    if (token_.kind != TokenKind::ValueName)
      return fail(token_, fmt::format("expected {}, got {}", what, describe(token_)));
    auto it = values_.find(token_.text);
    if (it == values_.end())
      return fail(token_, fmt::format("use of undefined value {}", token_.spelling));
    KILN_TRY_VOID(advance());
    return it->second.value;
  }

  // ---- Types ------------------------------------------------------------------------------------

  // dtype '[' (dim (',' dim)*)? ']'
  Expected<TensorType> parseType() {
    if (token_.kind != TokenKind::Identifier)
      return fail(token_, "expected a tensor type such as f32[2,3], got " + describe(token_));
    Token dtypeToken = token_;
    KILN_TRY(DType dtype, parseDTypeName());
    TensorType type{dtype, {}};
    KILN_TRY_VOID(expect(TokenKind::LeftBracket,
                         fmt::format("'[' after '{}' in a tensor type", dtypeToken.spelling)));
    int64_t product = 1;
    std::vector<SizeExpr> sizes;
    bool symbolic = false;
    if (token_.kind != TokenKind::RightBracket) {
      while (true) {
        Token sizeToken = token_;
        if (token_.kind != TokenKind::Integer && token_.kind != TokenKind::Identifier &&
            token_.kind != TokenKind::LeftParen && token_.kind != TokenKind::Minus)
          return fail(token_, "expected a dimension size in the tensor type, got " +
                                  describe(token_));
        KILN_TRY(SizeExpr size, parseSize());
        auto range = size.bounds();
        if (!range)
          return fail(sizeToken, range.error().message());
        if (size.isConstant() && range->low < 0)
          return fail(sizeToken, fmt::format("dimension size must be >= 0, got {}", range->low));
        if (range->low < 0)
          return fail(sizeToken, fmt::format("size {} can be negative: its least value over "
                                             "the symbols' ranges is {}",
                                             size.str(), range->low));
        if (range->high != 0 &&
            (__builtin_mul_overflow(product, range->high, &product) || product > kMaxElements))
          return fail(sizeToken, "tensor type is too large: more than 2^53 elements "
                                 "(zero-size dimensions aside)");
        type.shape.push_back(range->high);
        symbolic = symbolic || !size.isConstant();
        sizes.push_back(std::move(size));
        if (token_.kind == TokenKind::RightBracket)
          break;
        if (token_.kind != TokenKind::Comma)
          return fail(token_, "expected ',' or ']' after a dimension size, got " +
                                  describe(token_));
        KILN_TRY_VOID(advance());
      }
    }
    KILN_TRY_VOID(advance()); // ']'
    if (symbolic)
      type.symbolicDims = std::move(sizes);
    return type;
  }

  /// The current identifier token as a dtype; consumes it.
  Expected<DType> parseDTypeName() {
    std::optional<DType> dtype = parseDType(token_.spelling);
    if (!dtype)
      return fail(token_, fmt::format("unknown dtype '{}' (known: {})", token_.spelling,
                                       knownDTypes()));
    KILN_TRY_VOID(advance());
    return *dtype;
  }

  // ---- Literals ---------------------------------------------------------------------------------

  /// The current Integer token's value; does not consume it.
  Expected<int64_t> parseInt() const {
    int64_t value = 0;
    std::string_view text = token_.spelling;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      return fail(token_, fmt::format("integer {} does not fit in 64 bits", text));
    return value;
  }

  /// The current Integer, Float or inf/nan token's value; does not consume it.
  Expected<double> parseDouble() const {
    double value = 0;
    std::string_view text = token_.spelling;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      return fail(token_, fmt::format("number {} is out of the range of f64", text));
    return value;
  }

  bool isFloatLiteral() const {
    return token_.kind == TokenKind::Integer || token_.kind == TokenKind::Float ||
           isKeyword("inf") || isKeyword("nan");
  }

  /// What the current token is, as a literal: "a string", "an int", ...
  std::string describeLiteral() const {
    switch (token_.kind) {
    case TokenKind::Integer: return "an int";
    case TokenKind::Float: return "a float";
    case TokenKind::String: return "a string";
    case TokenKind::LeftBracket: return "a list";
    case TokenKind::Identifier:
      if (isKeyword("true") || isKeyword("false"))
        return "a bool";
      if (isKeyword("inf") || isKeyword("nan"))
        return "a float";
      if (parseDType(token_.spelling))
        return "a dtype";
      return describe(token_);
    default: return describe(token_);
    }
  }

  // ---- Attributes -------------------------------------------------------------------------------

  // '{' (name '=' value (',' name '=' value)*)? '}'
  Expected<AttrMap> parseAttrDict(const OpInfo &op) {
    KILN_TRY_VOID(advance()); // '{'
    AttrMap attrs;
    if (token_.kind == TokenKind::RightBrace) {
      KILN_TRY_VOID(advance());
      return attrs;
    }
    while (true) {
      if (token_.kind != TokenKind::Identifier)
        return fail(token_, "expected an attribute name, got " + describe(token_));
      Token name = token_;
      auto spec = std::find_if(op.attrs.begin(), op.attrs.end(),
                               [&](const AttrSpec &s) { return name.spelling == s.name; });
      if (spec == op.attrs.end())
        return fail(name, unknownAttributeMessage(op, name.spelling));
      if (attrs.contains(name.spelling))
        return fail(name, fmt::format("duplicate attribute '{}'", name.spelling));
      KILN_TRY_VOID(advance());
      KILN_TRY_VOID(
          expect(TokenKind::Equals, fmt::format("'=' after attribute name '{}'", name.spelling)));
      KILN_TRY(Attr value, parseAttrValue(op, *spec));
      attrs.emplace(name.text, std::move(value));
      if (token_.kind == TokenKind::RightBrace)
        break;
      if (token_.kind != TokenKind::Comma)
        return fail(token_, "expected ',' or '}' after attribute, got " + describe(token_));
      KILN_TRY_VOID(advance());
    }
    KILN_TRY_VOID(advance()); // '}'
    return attrs;
  }

  static std::string unknownAttributeMessage(const OpInfo &op, std::string_view name) {
    if (op.attrs.empty())
      return fmt::format("unknown attribute '{}': {} has no attributes", name, op.name);
    std::string known;
    for (const AttrSpec &spec : op.attrs)
      known += (known.empty() ? "" : ", ") + std::string(spec.name);
    return fmt::format("unknown attribute '{}' of {} (known: {})", name, op.name, known);
  }

  std::unexpected<Error> kindMismatch(const OpInfo &op, const AttrSpec &spec) const {
    return fail(token_, fmt::format("attribute '{}' of {} expects {}, got {}", spec.name, op.name,
                                    kindPhrase(spec.kind), describeLiteral()));
  }

  /// A value of the kind the op's schema gives the attribute. The schema, not
  /// the literal, decides the kind: `[]` is an empty Ints or Floats list and
  /// an int literal is accepted where a float is expected.
  Expected<Attr> parseAttrValue(const OpInfo &op, const AttrSpec &spec) {
    switch (spec.kind) {
    case AttrKind::Int: {
      if (token_.kind != TokenKind::Integer)
        return kindMismatch(op, spec);
      KILN_TRY(int64_t value, parseInt());
      KILN_TRY_VOID(advance());
      return Attr(value);
    }
    case AttrKind::Float: {
      if (!isFloatLiteral())
        return kindMismatch(op, spec);
      KILN_TRY(double value, parseDouble());
      KILN_TRY_VOID(advance());
      return Attr(value);
    }
    case AttrKind::Bool: {
      if (!isKeyword("true") && !isKeyword("false"))
        return kindMismatch(op, spec);
      bool value = isKeyword("true");
      KILN_TRY_VOID(advance());
      return Attr(value);
    }
    case AttrKind::String: {
      if (token_.kind != TokenKind::String)
        return kindMismatch(op, spec);
      std::string value = token_.text;
      KILN_TRY_VOID(advance());
      return Attr(std::move(value));
    }
    case AttrKind::Type: {
      if (token_.kind != TokenKind::Identifier || isKeyword("true") || isKeyword("false") ||
          isKeyword("inf") || isKeyword("nan"))
        return kindMismatch(op, spec);
      KILN_TRY(DType value, parseDTypeName());
      return Attr(value);
    }
    case AttrKind::Ints: {
      std::vector<int64_t> values;
      KILN_TRY_VOID(parseList(op, spec, [&]() -> Expected<void> {
        if (token_.kind != TokenKind::Integer)
          return listElementMismatch(op, spec);
        KILN_TRY(int64_t value, parseInt());
        values.push_back(value);
        return {};
      }));
      return Attr(std::move(values));
    }
    case AttrKind::Sizes: {
      std::vector<SizeExpr> values;
      if (token_.kind != TokenKind::LeftBracket)
        return kindMismatch(op, spec);
      KILN_TRY_VOID(advance());
      while (token_.kind != TokenKind::RightBracket) {
        if (!values.empty()) {
          if (token_.kind != TokenKind::Comma)
            return fail(token_, "expected ',' or ']' in list, got " + describe(token_));
          KILN_TRY_VOID(advance());
        }
        KILN_TRY(SizeExpr value, parseSize());
        values.push_back(std::move(value));
      }
      KILN_TRY_VOID(advance()); // ']'
      return Attr(std::move(values));
    }
    case AttrKind::Floats: {
      std::vector<double> values;
      KILN_TRY_VOID(parseList(op, spec, [&]() -> Expected<void> {
        if (!isFloatLiteral())
          return listElementMismatch(op, spec);
        KILN_TRY(double value, parseDouble());
        values.push_back(value);
        return {};
      }));
      return Attr(std::move(values));
    }
    }
    KILN_UNREACHABLE("unhandled attribute kind");
  }

  std::unexpected<Error> listElementMismatch(const OpInfo &op, const AttrSpec &spec) const {
    std::string element = spec.kind == AttrKind::Ints ? "an int" : "a float";
    return fail(token_, fmt::format("attribute '{}' of {} expects {}: each element must be {}, "
                                    "got {}",
                                    spec.name, op.name, kindPhrase(spec.kind), element,
                                    describeLiteral()));
  }

  /// '[' (element (',' element)*)? ']'; `element` reads the current token
  /// without consuming it.
  template <typename F>
  Expected<void> parseList(const OpInfo &op, const AttrSpec &spec, F element) {
    if (token_.kind != TokenKind::LeftBracket)
      return kindMismatch(op, spec);
    KILN_TRY_VOID(advance());
    if (token_.kind == TokenKind::RightBracket)
      return advance();
    while (true) {
      KILN_TRY_VOID(element());
      KILN_TRY_VOID(advance());
      if (token_.kind == TokenKind::RightBracket)
        return advance();
      if (token_.kind != TokenKind::Comma)
        return fail(token_, "expected ',' or ']' in list, got " + describe(token_));
      KILN_TRY_VOID(advance());
    }
  }

  Lexer lexer_;
  Token token_;
  std::unique_ptr<Graph> graph_;
  // Input, parameter and result names: identifiers and numbers never collide.
  std::unordered_map<std::string, Definition> values_;
};

} // namespace

Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text, std::string_view fileName,
                                            unsigned firstLine) {
  return Parser(text, std::string(fileName), firstLine).parse();
}

} // namespace kiln::ir
