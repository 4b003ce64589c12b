// Parsing kernel IR expressions: C-like precedence (the printer's), typed
// literals, loads, casts and calls. Nodes are built with their constructors, not
// the folding builders, so the text comes back as written; every type rule the
// builders assert is checked here first and reported as a ParseError.
#include "ir/kernel/ParserCore.h"

#include "ir/kernel/Printer.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace kiln::kir::text {

namespace {

struct BinaryOperator {
  std::string_view text;
  BinaryOp op;
  int precedence; ///< as the printer's: || 1, && 2, == 3, < 4, + 5, * 6
  bool bitwise;   ///< '&' and '|' take integers; '&&' and '||' take bools
};

constexpr BinaryOperator kBinaryOperators[] = {
    {"||", BinaryOp::Or, 1, false},  {"|", BinaryOp::Or, 1, true},
    {"&&", BinaryOp::And, 2, false}, {"&", BinaryOp::And, 2, true},
    {"==", BinaryOp::Eq, 3, false},  {"!=", BinaryOp::Ne, 3, false},
    {"<", BinaryOp::Lt, 4, false},   {"<=", BinaryOp::Le, 4, false},
    {">", BinaryOp::Gt, 4, false},   {">=", BinaryOp::Ge, 4, false},
    {"+", BinaryOp::Add, 5, false},  {"-", BinaryOp::Sub, 5, false},
    {"*", BinaryOp::Mul, 6, false},  {"/", BinaryOp::Div, 6, false},
    {"%", BinaryOp::Mod, 6, false},
};

const BinaryOperator *binaryOperator(const Token &token) {
  if (token.kind != TokenKind::Punct)
    return nullptr;
  for (const BinaryOperator &entry : kBinaryOperators)
    if (token.spelling == entry.text)
      return &entry;
  return nullptr;
}

struct NamedIntrinsic {
  std::string_view name;
  Intrinsic fn;
  size_t arguments;
};

constexpr NamedIntrinsic kIntrinsics[] = {
    {"exp", Intrinsic::Exp, 1},   {"log", Intrinsic::Log, 1},     {"sqrt", Intrinsic::Sqrt, 1},
    {"rsqrt", Intrinsic::Rsqrt, 1}, {"tanh", Intrinsic::Tanh, 1}, {"erf", Intrinsic::Erf, 1},
    {"sin", Intrinsic::Sin, 1},   {"cos", Intrinsic::Cos, 1},     {"abs", Intrinsic::Abs, 1},
    {"floor", Intrinsic::Floor, 1}, {"pow", Intrinsic::Pow, 2},   {"fma", Intrinsic::Fma, 3},
};

constexpr ShuffleMode kShuffleModes[] = {ShuffleMode::Xor, ShuffleMode::Down, ShuffleMode::Up,
                                         ShuffleMode::Idx};

bool isIntegerLike(const Type &type) { return isInteger(type.dtype) || type.dtype == DType::Bool; }

/// The double a float literal of `dtype` denotes. The printer writes a value its dtype holds
/// as the shortest f32 text (f64: the shortest f64 text) and any other value with 17 digits,
/// so the f32 reading is right exactly when printing it gives the text back.
std::optional<double> floatLiteralValue(std::string_view number, DType dtype) {
  double asDouble = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), asDouble);
  if (error != std::errc() || end != number.data() + number.size())
    return std::nullopt;
  if (dtype == DType::F64 || roundToDType(asDouble, dtype) == asDouble)
    return asDouble;
  float asFloat = 0;
  auto [floatEnd, floatError] =
      std::from_chars(number.data(), number.data() + number.size(), asFloat);
  if (floatError == std::errc() && roundToDType(asFloat, dtype) == asFloat) {
    std::string shortest = fmt::format("{}", asFloat);
    if (shortest == number || shortest + ".0" == number)
      return static_cast<double>(asFloat);
  }
  return asDouble;
}

} // namespace

Expected<ExprPtr> KernelTextParser::parseExpr(int minPrecedence) {
  NestingGuard guard(depth_);
  if (guard.tooDeep())
    return errorAt(peek(), tooDeepMessage());
  KILN_TRY(ExprPtr lhs, parseUnary());
  while (const BinaryOperator *op = binaryOperator(peek())) {
    if (op->precedence < minPrecedence)
      break;
    const Token &opToken = advance();
    // Left-associative: the right operand binds strictly tighter.
    KILN_TRY(ExprPtr rhs, parseExpr(op->precedence + 1));
    bool boolOperands = lhs->type().dtype == DType::Bool;
    if ((op->op == BinaryOp::And || op->op == BinaryOp::Or) && op->bitwise == boolOperands)
      return errorAt(opToken, fmt::format("'{}' takes {} operands, not {}; use '{}'", op->text,
                                          op->bitwise ? "integer" : "bool",
                                          typeName(lhs->type()),
                                          op->op == BinaryOp::And ? (op->bitwise ? "&&" : "&")
                                                                  : (op->bitwise ? "||" : "|")));
    KILN_TRY(lhs, makeBinary(op->op, opToken, std::move(lhs), std::move(rhs)));
  }
  return lhs;
}

Expected<ExprPtr> KernelTextParser::makeBinary(BinaryOp op, const Token &opToken, ExprPtr lhs,
                                               ExprPtr rhs) {
  if (lhs->type() != rhs->type())
    return errorAt(opToken, fmt::format("operands of '{}' have different types: {} and {}",
                                        opToken.spelling, typeName(lhs->type()),
                                        typeName(rhs->type())));
  Type type = lhs->type();
  if (isComparison(op))
    type = Type{DType::Bool, type.lanes};
  else if ((op == BinaryOp::And || op == BinaryOp::Or) && !isIntegerLike(type))
    return errorAt(opToken, fmt::format("'{}' takes integers or bools, not {}", opToken.spelling,
                                        typeName(type)));
  return std::make_shared<Binary>(op, std::move(lhs), std::move(rhs), type);
}

Expected<ExprPtr> KernelTextParser::parseUnary() {
  const Token &token = peek();
  if (token.is("-")) {
    const Token &next = peek(1);
    // A minus sign before a literal is part of it: the printer writes -3 and -inff32.
    if (next.kind == TokenKind::Number) {
      advance();
      return parseNumber(true);
    }
    if (next.kind == TokenKind::Identifier) {
      KILN_TRY(ExprPtr constant, parseNamedConstant(next, true));
      if (constant) {
        advance();
        advance();
        return constant;
      }
    }
  }
  if (token.is("-") || token.is("!")) {
    advance();
    NestingGuard guard(depth_);
    if (guard.tooDeep())
      return errorAt(token, tooDeepMessage());
    KILN_TRY(ExprPtr operand, parseUnary());
    if (token.is("!")) {
      if (operand->type().dtype != DType::Bool)
        return errorAt(token, fmt::format("'!' takes a bool, not {}", typeName(operand->type())));
      return std::make_shared<Unary>(UnaryOp::Not, std::move(operand));
    }
    if (operand->type().dtype == DType::Bool)
      return errorAt(token, "'-' takes a number, not a bool");
    return std::make_shared<Unary>(UnaryOp::Neg, std::move(operand));
  }
  return parsePrimary();
}

Expected<ExprPtr> KernelTextParser::parseNumber(bool negative) {
  const Token &token = advance();
  bool isFloat = token.number.find_first_of(".eE") != std::string_view::npos;
  Type type = Type::index();
  if (!token.suffix.empty()) {
    std::optional<Type> named = typeNamed(token.suffix);
    if (!named)
      return errorAt(token, fmt::format("'{}' is not a type (a literal's suffix is one: 3i32, "
                                        "1.5f32)",
                                        token.suffix));
    type = *named;
  }
  if (isFloatingPoint(type.dtype)) {
    std::optional<double> value = floatLiteralValue(token.number, type.dtype);
    if (!value || std::isinf(*value))
      return errorAt(token, fmt::format("{} is not a finite {} value", token.number,
                                        typeName(type)));
    return std::make_shared<FloatImm>(negative ? -*value : *value, type);
  }
  if (isFloat)
    return errorAt(token, fmt::format("a literal of {} has no fraction or exponent",
                                      typeName(type)));
  if (!isIntegerLike(type) || type.dtype == DType::Bool)
    return errorAt(token, fmt::format("an integer literal cannot be {}", typeName(type)));
  uint64_t magnitude = 0;
  auto [end, error] =
      std::from_chars(token.number.data(), token.number.data() + token.number.size(), magnitude);
  uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
  if (error != std::errc() || magnitude > limit)
    return errorAt(token, fmt::format("integer literal {}{} does not fit in 64 bits",
                                      negative ? "-" : "", token.number));
  auto value = static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
  return std::make_shared<IntImm>(value, type);
}

Expected<ExprPtr> KernelTextParser::parseNamedConstant(const Token &token, bool negative) {
  std::string_view text = token.spelling;
  for (std::string_view name : {"true", "false"}) {
    if (!text.starts_with(name))
      continue;
    std::optional<Type> type = typeNamed(fmt::format("bool{}", text.substr(name.size())));
    if (type && !negative)
      return std::make_shared<IntImm>(name == "true" ? 1 : 0, *type);
  }
  for (std::string_view name : {"inf", "nan"}) {
    if (!text.starts_with(name))
      continue;
    std::optional<Type> type = typeNamed(text.substr(name.size()));
    if (type && isFloatingPoint(type->dtype)) {
      double value = name == "inf" ? std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::quiet_NaN();
      return std::make_shared<FloatImm>(negative ? -value : value, *type);
    }
  }
  return ExprPtr(nullptr); // not a constant: a variable's name
}

Expected<ExprPtr> KernelTextParser::parsePrimary() {
  const Token &token = peek();
  if (token.kind == TokenKind::Number)
    return parseNumber(false);
  if (token.is("(")) {
    advance();
    KILN_TRY(ExprPtr inner, parseExpr());
    // A predicated load is the one expression with a trailing `if`, always in parentheses.
    if (peek().is("if")) {
      auto load = as<Load>(*inner);
      if (!load || load->predicate)
        return expected("')'");
      const Token &ifToken = advance();
      KILN_TRY(ExprPtr predicate, parseExpr());
      if (predicate->type().dtype != DType::Bool ||
          (predicate->type().lanes != 1 && predicate->type().lanes != load->type().lanes))
        return errorAt(ifToken, fmt::format("a load's predicate is a bool scalar or a bool vector "
                                            "of its lanes, not {}",
                                            typeName(predicate->type())));
      inner = std::make_shared<Load>(load->buffer, load->index, load->type().lanes,
                                     std::move(predicate));
    }
    KILN_TRY_VOID(expect(")"));
    return inner;
  }
  if (token.kind != TokenKind::Identifier)
    return expected("an expression");
  if (token.spelling == "load" && peek(1).kind == TokenKind::Identifier)
    return parseLoad();
  if (peek(1).is("(") || (token.spelling == "cast" && peek(1).is("<")))
    return parseCall(advance());
  KILN_TRY(ExprPtr constant, parseNamedConstant(token, false));
  if (constant) {
    advance();
    return constant;
  }
  KILN_TRY(VarPtr var, lookUpVar(token));
  advance();
  return std::make_shared<VarRef>(std::move(var));
}

Expected<ExprPtr> KernelTextParser::parseLoad() {
  advance(); // load
  const Token &typeToken = peek();
  KILN_TRY(Type type, expectType());
  const Token &bufferToken = peek();
  KILN_TRY(BufferPtr buffer, expectBufferName());
  if (type.dtype != buffer->dtype)
    return errorAt(typeToken, fmt::format("load of {} from buffer '{}' of {}", typeName(type),
                                          bufferToken.spelling, dtypeName(buffer->dtype)));
  KILN_TRY(ExprPtr index, parseSubscript("a load index"));
  return std::make_shared<Load>(std::move(buffer), std::move(index), type.lanes);
}

Expected<ExprPtr> KernelTextParser::parseSubscript(std::string_view what) {
  KILN_TRY_VOID(expect("["));
  KILN_TRY(ExprPtr index, parseIndex(what));
  KILN_TRY_VOID(expect("]"));
  return index;
}

Expected<ExprPtr> KernelTextParser::parseExprOfType(Type type, std::string_view what) {
  const Token &start = peek();
  KILN_TRY(ExprPtr e, parseExpr());
  if (e->type() != type)
    return errorAt(start, fmt::format("{} must be {}, not {}", what, typeName(type),
                                      typeName(e->type())));
  return e;
}

Expected<std::vector<ExprPtr>> KernelTextParser::parseArguments(size_t count,
                                                                std::string_view what) {
  KILN_TRY_VOID(expect("("));
  std::vector<ExprPtr> args;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && !accept(","))
      return expected(fmt::format("',' ({} takes {} arguments)", what, count));
    KILN_TRY(ExprPtr arg, parseExpr());
    args.push_back(std::move(arg));
  }
  if (!peek().is(")"))
    return expected(fmt::format("')' ({} takes {} argument{})", what, count,
                                count == 1 ? "" : "s"));
  advance();
  return args;
}

Expected<ExprPtr> KernelTextParser::parseCall(const Token &name) {
  std::string_view fn = name.spelling;
  if (fn == "cast") {
    KILN_TRY_VOID(expect("<"));
    KILN_TRY(Type type, expectType());
    KILN_TRY_VOID(expect(">"));
    KILN_TRY(auto args, parseArguments(1, "cast"));
    if (args[0]->type().lanes != type.lanes)
      return errorAt(name, fmt::format("cast from {} to {} changes the lane count",
                                       typeName(args[0]->type()), typeName(type)));
    return std::make_shared<Cast>(std::move(args[0]), type);
  }
  if (fn == "select") {
    KILN_TRY(auto args, parseArguments(3, "select"));
    const Type &cond = args[0]->type();
    if (args[1]->type() != args[2]->type())
      return errorAt(name, fmt::format("select's arms have different types: {} and {}",
                                       typeName(args[1]->type()), typeName(args[2]->type())));
    if (cond.dtype != DType::Bool || (cond.lanes != 1 && cond.lanes != args[1]->type().lanes))
      return errorAt(name, fmt::format("select's condition must be bool with 1 or {} lanes, not {}",
                                       args[1]->type().lanes, typeName(cond)));
    return std::make_shared<Select>(std::move(args[0]), std::move(args[1]), std::move(args[2]));
  }
  if (fn == "min" || fn == "max") {
    KILN_TRY(auto args, parseArguments(2, fn));
    return makeBinary(fn == "min" ? BinaryOp::Min : BinaryOp::Max, name, std::move(args[0]),
                      std::move(args[1]));
  }
  if (fn == "broadcast") {
    KILN_TRY_VOID(expect("("));
    KILN_TRY(ExprPtr value, parseExpr());
    KILN_TRY_VOID(expect(","));
    const Token &lanesToken = peek();
    KILN_TRY(int64_t lanes, expectInteger("a lane count"));
    KILN_TRY_VOID(expect(")"));
    if (value->type().isVector())
      return errorAt(name, fmt::format("broadcast of a vector ({})", typeName(value->type())));
    if (lanes < 1 || lanes > kMaxLanes)
      return errorAt(lanesToken, fmt::format("a broadcast has 1 to {} lanes, not {}", kMaxLanes,
                                             lanes));
    return std::make_shared<Broadcast>(std::move(value), static_cast<int>(lanes));
  }
  for (ShuffleMode mode : kShuffleModes) {
    if (fn != fmt::format("shuffle_{}", shuffleModeName(mode)))
      continue;
    KILN_TRY(auto args, parseArguments(2, fn));
    const Type &value = args[0]->type();
    if (value.isVector() || (value.dtype != DType::F32 && value.dtype != DType::F64 &&
                             value.dtype != DType::I32 && value.dtype != DType::I64))
      return errorAt(name, fmt::format("{} moves an f32, f64, i32 or i64 scalar, not {}", fn,
                                       typeName(value)));
    if (args[1]->type() != Type::scalar(DType::I32))
      return errorAt(name, fmt::format("{}'s lane must be an i32 scalar, not {}", fn,
                                       typeName(args[1]->type())));
    return std::make_shared<Shuffle>(mode, std::move(args[0]), std::move(args[1]));
  }
  for (const NamedIntrinsic &intrinsic : kIntrinsics) {
    if (fn != intrinsic.name)
      continue;
    KILN_TRY(auto args, parseArguments(intrinsic.arguments, fn));
    Type type = args[0]->type();
    for (const ExprPtr &arg : args)
      if (arg->type() != type)
        return errorAt(name, fmt::format("{}'s arguments have different types: {} and {}", fn,
                                         typeName(type), typeName(arg->type())));
    if (!isFloatingPoint(type.dtype) && intrinsic.fn != Intrinsic::Abs)
      return errorAt(name, fmt::format("{} takes floats, not {}", fn, typeName(type)));
    return std::make_shared<Call>(intrinsic.fn, std::move(args), type);
  }
  return errorAt(name, fmt::format("unknown function '{}'", fn));
}

} // namespace kiln::kir::text
