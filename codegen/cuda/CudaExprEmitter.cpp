// Kernel IR expressions -> CUDA C, lane by lane: operators where C's meaning
// is the kernel IR's, prelude helpers where it is not (wrapping and total
// integer math, NaN-propagating min/max, narrow-float conversions), aligned
// vector copies for vector loads, and shuffles hoisted so a whole warp runs them.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/Builder.h"
#include "ir/kernel/ScalarOps.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace kiln::codegen::cuda {
namespace {

constexpr int kPrimary = 0, kUnary = 3, kTernary = 16;

/// `code` as an operand of an operator of `precedence`: parenthesized when it
/// binds more loosely (or equally, for `strict`: the right side of a left-associative operator).
std::string operand(const CCode &code, int precedence, bool strict = false) {
  bool wrap = strict ? code.precedence >= precedence : code.precedence > precedence;
  return wrap ? "(" + code.text + ")" : code.text;
}

CCode infix(const CCode &a, std::string_view op, const CCode &b, int precedence) {
  return {fmt::format("{} {} {}", operand(a, precedence), op, operand(b, precedence, true)),
          precedence};
}

CCode callOf(std::string_view function, std::initializer_list<const CCode *> args) {
  std::string text(function);
  text += '(';
  bool first = true;
  for (const CCode *arg : args) {
    text += first ? "" : ", ";
    text += arg->text;
    first = false;
  }
  return {text + ")", kPrimary};
}

CCode castTo(std::string_view type, const CCode &value) {
  return {fmt::format("({}){}", type, operand(value, kUnary)), kUnary};
}

const char *integerSuffix(DType dtype) {
  switch (dtype) {
  case DType::I64: return "i64";
  case DType::I32: return "i32";
  case DType::I8: return "i8";
  default: KILN_UNREACHABLE("not an integer dtype");
  }
}

const char *narrowName(DType dtype) {
  switch (dtype) {
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F8E4M3: return "f8e4m3";
  case DType::F8E5M2: return "f8e5m2";
  default: KILN_UNREACHABLE("not a narrow float");
  }
}

CCode intLiteral(int64_t value, DType dtype) {
  int precedence = value < 0 ? kUnary : kPrimary;
  switch (dtype) {
  case DType::Bool: return {value ? "true" : "false", kPrimary};
  case DType::I8: return {fmt::format("(signed char){}", value), kUnary};
  case DType::I32:
    if (value == std::numeric_limits<int32_t>::min())
      return {"(-2147483647 - 1)", kPrimary};
    return {fmt::format("{}", value), precedence};
  default: // i64: decimal literals take the first type that holds them
    if (value == std::numeric_limits<int64_t>::min())
      return {"(-9223372036854775807LL - 1)", kPrimary};
    if (value > std::numeric_limits<int32_t>::max() || value <= std::numeric_limits<int32_t>::min())
      return {fmt::format("{}LL", value), precedence};
    return {fmt::format("{}", value), precedence};
  }
}

std::optional<CCode> floatLiteral(double value, DType dtype) {
  bool f32 = dtype == DType::F32;
  if (dtype != DType::F32 && dtype != DType::F64)
    return std::nullopt;
  if (std::isnan(value))
    return CCode{f32 ? "__int_as_float(0x7fffffff)" : "__longlong_as_double(0x7ff8000000000000LL)",
                 kPrimary};
  if (std::isinf(value)) {
    if (f32)
      return CCode{value > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)", kPrimary};
    return CCode{value > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                           : "__longlong_as_double(0xfff0000000000000LL)",
                 kPrimary};
  }
  // The shortest decimal that reads back as the same value.
  std::string text = f32 ? fmt::format("{}", static_cast<float>(value)) : fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  if (f32)
    text += 'f';
  return CCode{text, std::signbit(value) ? kUnary : kPrimary};
}

CCode zeroOf(DType dtype) {
  switch (dtype) {
  case DType::F64: return {"0.0", kPrimary};
  case DType::F32: return {"0.0f", kPrimary};
  case DType::Bool: return {"false", kPrimary};
  case DType::I64:
  case DType::I32: return {"0", kPrimary};
  default: return castTo(registerCType(dtype), CCode{"0", kPrimary});
  }
}

/// An i64 operand of an operator whose result may pass int's range, as a
/// long long so C computes in 64 bits.
CCode widened(const CCode &code) {
  if (!code.isInt)
    return code;
  return castTo("long long", code);
}

} // namespace

bool fitsInInt(const std::optional<kir::Interval> &range) {
  return range && range->min >= std::numeric_limits<int32_t>::min() &&
         range->max <= std::numeric_limits<int32_t>::max();
}

std::optional<std::string> CudaEmitter::vectorCType(DType dtype, int lanes) {
  int bytes = lanes * dtypeByteSize(dtype);
  switch (dtype) {
  case DType::F32: return lanes == 2 ? "float2" : lanes == 4 ? "float4" : std::optional<std::string>{};
  case DType::F64: return lanes == 2 ? "double2" : std::optional<std::string>{};
  case DType::I32: return lanes == 2 ? "int2" : lanes == 4 ? "int4" : std::optional<std::string>{};
  case DType::I64: return lanes == 2 ? "longlong2" : std::optional<std::string>{};
  default: // 8- and 16-bit elements move as 32-bit words
    if (bytes == 4)
      return "unsigned int";
    if (bytes == 8)
      return "uint2";
    if (bytes == 16)
      return "uint4";
    return std::nullopt;
  }
}

bool CudaEmitter::hasLaneFields(DType dtype, int lanes) {
  return vectorCType(dtype, lanes) && dtypeByteSize(dtype) >= 4;
}

namespace {
constexpr const char *kFields[] = {"x", "y", "z", "w"};

/// The unsigned type of a narrow element's bytes (packing must not sign-extend).
const char *bitsCType(DType dtype) { return dtypeByteSize(dtype) == 1 ? "unsigned char" : "unsigned short"; }
} // namespace

CCode CudaEmitter::vectorLane(const std::string &name, DType dtype, int lanes, int k) {
  if (hasLaneFields(dtype, lanes))
    return {fmt::format("{}.{}", name, kFields[k]), kPrimary};
  // Narrow elements packed little-endian into 32-bit words.
  int bits = 8 * dtypeByteSize(dtype), perWord = 32 / bits;
  int word = k / perWord, shift = (k % perWord) * bits;
  std::string wordText = lanes * bits == 32 ? name : fmt::format("{}.{}", name, kFields[word]);
  std::string shifted = shift == 0 ? wordText : fmt::format("({} >> {})", wordText, shift);
  return castTo(storageCType(dtype), CCode{shifted, kPrimary});
}

std::string CudaEmitter::vectorValue(const std::vector<CCode> &values, DType dtype) {
  int lanes = static_cast<int>(values.size());
  std::string type = *vectorCType(dtype, lanes);
  std::vector<std::string> fields;
  if (hasLaneFields(dtype, lanes)) {
    for (const CCode &value : values)
      fields.push_back(value.text);
  } else {
    int bits = 8 * dtypeByteSize(dtype), perWord = 32 / bits;
    for (int word = 0; word * perWord < lanes; ++word) {
      std::vector<std::string> parts;
      for (int k = word * perWord; k < (word + 1) * perWord; ++k) {
        // Through the unsigned type of the element's width: no sign bits spill over.
        std::string part = fmt::format("(unsigned int)({}){}", bitsCType(dtype), operand(values[k], kUnary));
        int shift = (k % perWord) * bits;
        parts.push_back(shift == 0 ? part : fmt::format("{} << {}", part, shift));
      }
      fields.push_back(fmt::format("{}", fmt::join(parts, " | ")));
    }
  }
  if (fields.size() == 1 && !hasLaneFields(dtype, lanes))
    return fields[0];
  return fmt::format("make_{}({})", type, fmt::join(fields, ", "));
}

CCode CudaEmitter::fromStorage(CCode element, DType dtype) {
  if (dtype == DType::Bool)
    return infix(element, "!=", CCode{"0", kPrimary}, 10);
  return element;
}

CCode CudaEmitter::materialize(CCode code, DType dtype, std::string_view nameHint) {
  if (code.precedence == kPrimary)
    return code;
  std::string name = freshName(nameHint, "tmp");
  line(fmt::format("const {} {} = {};", code.isInt ? "int" : registerCType(dtype), name, code.text));
  return {name, kPrimary, code.isInt};
}

Expected<CCode> CudaEmitter::emitScalar(const kir::ExprPtr &expr) {
  KILN_CHECK(expr->type().lanes == 1, "emitScalar of a vector expression");
  KILN_TRY(std::vector<CCode> lanes, emitLanes(expr));
  return lanes.front();
}

Expected<std::vector<CCode>> CudaEmitter::emitLanes(const kir::ExprPtr &expr) {
  const kir::Type type = expr->type();
  const size_t lanes = static_cast<size_t>(type.lanes);
  auto splat = [&](CCode code) { return std::vector<CCode>(lanes, code); };
  switch (expr->kind()) {
  case kir::ExprKind::IntImm:
    if (kir::isNarrowFloat(type.dtype))
      return fail(ErrorCode::Unsupported, "an integer constant of a narrow float type");
  {
    int64_t value = static_cast<const kir::IntImm &>(*expr).value;
    CCode literal = intLiteral(value, type.dtype);
    // intLiteral writes i64 values of (INT_MIN, INT_MAX] as int literals.
    literal.isInt = type.dtype == DType::I64 && value > std::numeric_limits<int32_t>::min() &&
                    value <= std::numeric_limits<int32_t>::max();
    return splat(literal);
  }
  case kir::ExprKind::FloatImm: {
    auto literal = floatLiteral(static_cast<const kir::FloatImm &>(*expr).value, type.dtype);
    if (!literal)
      return fail(ErrorCode::Unsupported,
                  fmt::format("a {} constant (narrow floats are storage types)", dtypeName(type.dtype)));
    return splat(*literal);
  }
  case kir::ExprKind::VarRef: {
    auto &var = *static_cast<const kir::VarRef &>(*expr).var;
    auto found = varNames_.find(&var);
    KILN_CHECK(found != varNames_.end(), "the verifier admits variables in scope only");
    if (lanes == 1)
      return std::vector<CCode>{{found->second, kPrimary, intVars_.contains(&var)}};
    std::vector<CCode> result;
    for (size_t k = 0; k < lanes; ++k)
      result.push_back({vectorVars_.contains(&var) ? fmt::format("{}.{}", found->second, kFields[k])
                                                   : fmt::format("{}[{}]", found->second, k),
                        kPrimary});
    return result;
  }
  case kir::ExprKind::Unary: {
    auto &unary = static_cast<const kir::Unary &>(*expr);
    KILN_TRY(std::vector<CCode> values, emitLanes(unary.operand));
    DType dtype = type.dtype;
    std::optional<kir::Interval> range;
    if (dtype == DType::I64)
      range = kir::integerBounds(expr, ranges_);
    bool plainNeg = dtype == DType::F32 || dtype == DType::F64 || range;
    for (CCode &value : values) {
      if (value.isInt && !fitsInInt(range))
        value = widened(value);
      if (unary.op == kir::UnaryOp::Not) {
        if (dtype != DType::Bool)
          return fail(ErrorCode::Unsupported, fmt::format("! on {}", dtypeName(dtype)));
        value = {"!" + operand(value, kUnary), kUnary};
      } else if (plainNeg) {
        std::string inner = operand(value, kUnary);
        value = {"-" + (inner.starts_with('-') ? "(" + inner + ")" : inner), kUnary, value.isInt};
      } else if (isInteger(dtype)) {
        value = callOf(fmt::format("kiln_neg_{}", integerSuffix(dtype)), {&value});
      } else {
        return fail(ErrorCode::Unsupported, fmt::format("negation of {}", dtypeName(dtype)));
      }
    }
    return values;
  }
  case kir::ExprKind::Binary: return emitBinary(static_cast<const kir::Binary &>(*expr), expr);
  case kir::ExprKind::Select: {
    auto &select = static_cast<const kir::Select &>(*expr);
    KILN_TRY(std::vector<CCode> conds, emitLanes(select.cond));
    KILN_TRY(std::vector<CCode> onTrue, emitLanes(select.onTrue));
    KILN_TRY(std::vector<CCode> onFalse, emitLanes(select.onFalse));
    std::vector<CCode> result;
    for (size_t k = 0; k < lanes; ++k) {
      const CCode &cond = conds.size() == 1 ? conds[0] : conds[k];
      // ?: takes the common type: int only when both arms are.
      result.push_back({fmt::format("{} ? {} : {}", operand(cond, kTernary, true), onTrue[k].text,
                                    operand(onFalse[k], kTernary, true)),
                        kTernary, onTrue[k].isInt && onFalse[k].isInt});
    }
    return result;
  }
  case kir::ExprKind::Cast: {
    auto &cast = static_cast<const kir::Cast &>(*expr);
    KILN_TRY(std::vector<CCode> values, emitLanes(cast.value));
    for (CCode &value : values) {
      KILN_TRY(value, emitCast(value, cast.value->type().dtype, type.dtype));
    }
    return values;
  }
  case kir::ExprKind::Load: return emitLoad(static_cast<const kir::Load &>(*expr));
  case kir::ExprKind::Call: return emitCall(static_cast<const kir::Call &>(*expr));
  case kir::ExprKind::Broadcast: {
    auto &broadcast = static_cast<const kir::Broadcast &>(*expr);
    KILN_TRY(CCode value, emitScalar(broadcast.value));
    // Computed once, read by every lane.
    return splat(materialize(value, broadcast.value->type().dtype, "splat"));
  }
  case kir::ExprKind::Shuffle: {
    KILN_TRY(CCode value, emitShuffle(static_cast<const kir::Shuffle &>(*expr)));
    return std::vector<CCode>{value};
  }
  }
  KILN_UNREACHABLE("unknown expression kind");
}

Expected<std::vector<CCode>> CudaEmitter::emitBinary(const kir::Binary &binary,
                                                     const kir::ExprPtr &self) {
  DType dtype = binary.lhs->type().dtype;
  if (kir::isNarrowFloat(dtype))
    return fail(ErrorCode::Unsupported,
                fmt::format("{} on {} (narrow floats are storage types: cast to f32 first)",
                            static_cast<int>(binary.op), dtypeName(dtype)));
  KILN_TRY(std::vector<CCode> lhs, emitLanes(binary.lhs));
  KILN_TRY(std::vector<CCode> rhs, emitLanes(binary.rhs));
  bool isFloat = dtype == DType::F32 || dtype == DType::F64;
  bool isBoolean = dtype == DType::Bool;
  const char *floatSuffix = dtype == DType::F32 ? "f32" : "f64";
  // i64 index math reads as plain operators where the interval analysis proves
  // nothing wraps (a constant-only operation could still overflow C's int).
  std::optional<kir::Interval> range;
  if (dtype == DType::I64)
    range = kir::integerBounds(self, ranges_);
  bool provenNoWrap = range && !(kir::constIntValue(binary.lhs) && kir::constIntValue(binary.rhs));
  std::optional<int64_t> constantDivisor = kir::constIntValue(binary.rhs);
  bool safeDivisor = constantDivisor && *constantDivisor > 0 && dtype != DType::I8;

  auto unsupported = [&]() {
    return fail(ErrorCode::Unsupported, fmt::format("binary operator {} on {}",
                                                    static_cast<int>(binary.op), dtypeName(dtype)));
  };
  std::vector<CCode> result;
  for (size_t k = 0; k < lhs.size(); ++k) {
    const CCode &a = lhs[k], &b = rhs[k];
    // Both operands are ints: C computes in int, which is exact where the
    // result fits; elsewhere the i64 helpers or a widened operand take over.
    bool bothInt = a.isInt && b.isInt;
    bool intResult = bothInt && fitsInInt(range);
    auto helper = [&](std::string_view op) {
      return callOf(fmt::format("kiln_{}_{}", op, isFloat ? floatSuffix : integerSuffix(dtype)),
                    {&a, &b});
    };
    auto intHelper = [&](std::string_view op) {
      CCode code = callOf(fmt::format("kiln_{}_i32", op), {&a, &b});
      code.isInt = true;
      return code;
    };
    auto asInt = [](CCode code, bool isInt) {
      code.isInt = isInt;
      return code;
    };
    auto arithmetic = [&](std::string_view symbol, std::string_view name, int precedence) -> Expected<CCode> {
      if (isBoolean)
        return unsupported();
      if (isFloat)
        return infix(a, symbol, b, precedence);
      if (intResult)
        return asInt(infix(a, symbol, b, precedence), true);
      if (provenNoWrap)
        return infix(bothInt ? widened(a) : a, symbol, b, precedence);
      return helper(name);
    };
    CCode code;
    switch (binary.op) {
    case kir::BinaryOp::Add: {
      KILN_TRY(code, arithmetic("+", "add", 6));
      break;
    }
    case kir::BinaryOp::Sub: {
      KILN_TRY(code, arithmetic("-", "sub", 6));
      break;
    }
    case kir::BinaryOp::Mul: {
      KILN_TRY(code, arithmetic("*", "mul", 5));
      break;
    }
    case kir::BinaryOp::Div:
      if (isBoolean)
        return unsupported();
      // A positive divisor cannot overflow int division; -1 can (INT_MIN / -1).
      if (isFloat || safeDivisor)
        code = asInt(infix(a, "/", b, 5), bothInt);
      else
        code = intResult ? intHelper("div") : helper("div");
      break;
    case kir::BinaryOp::Mod:
      if (isBoolean)
        return unsupported();
      if (isFloat)
        code = callOf(dtype == DType::F32 ? "fmodf" : "fmod", {&a, &b});
      else
        // |a % b| <= |a|, and the helpers give 0 for b = -1: no overflow.
        code = safeDivisor ? asInt(infix(a, "%", b, 5), bothInt)
               : bothInt   ? intHelper("mod")
                           : helper("mod");
      break;
    case kir::BinaryOp::Min:
      code = isBoolean ? infix(a, "&&", b, 14) : bothInt ? intHelper("min") : helper("min");
      break;
    case kir::BinaryOp::Max:
      code = isBoolean ? infix(a, "||", b, 15) : bothInt ? intHelper("max") : helper("max");
      break;
    case kir::BinaryOp::Eq: code = infix(a, "==", b, 10); break;
    case kir::BinaryOp::Ne: code = infix(a, "!=", b, 10); break;
    case kir::BinaryOp::Lt: code = infix(a, "<", b, 9); break;
    case kir::BinaryOp::Le: code = infix(a, "<=", b, 9); break;
    case kir::BinaryOp::Gt: code = infix(a, ">", b, 9); break;
    case kir::BinaryOp::Ge: code = infix(a, ">=", b, 9); break;
    case kir::BinaryOp::And:
    case kir::BinaryOp::Or: {
      bool isAnd = binary.op == kir::BinaryOp::And;
      if (isBoolean)
        code = infix(a, isAnd ? "&&" : "||", b, isAnd ? 14 : 15);
      else if (isInteger(dtype))
        // Bitwise on integers; i8 operands promote to int, so narrow the result back.
        // Bits of sign-extended ints are those of the sign-extended result.
        code = dtype == DType::I8 ? castTo("signed char", infix(a, isAnd ? "&" : "|", b, isAnd ? 11 : 13))
                                  : asInt(infix(a, isAnd ? "&" : "|", b, isAnd ? 11 : 13), bothInt);
      else
        return unsupported();
      break;
    }
    }
    result.push_back(std::move(code));
  }
  return result;
}

Expected<std::vector<CCode>> CudaEmitter::emitCall(const kir::Call &call) {
  DType dtype = call.type().dtype;
  size_t arity = call.fn == kir::Intrinsic::Pow ? 2 : call.fn == kir::Intrinsic::Fma ? 3 : 1;
  KILN_CHECK(call.args.size() == arity, "the verifier admits intrinsics of their own arity only");
  std::vector<std::vector<CCode>> args;
  for (const kir::ExprPtr &arg : call.args) {
    KILN_TRY(std::vector<CCode> lanes, emitLanes(arg));
    args.push_back(std::move(lanes));
  }
  std::string function;
  if (isInteger(dtype) && call.fn == kir::Intrinsic::Abs) {
    function = fmt::format("kiln_abs_{}", integerSuffix(dtype));
  } else if (dtype == DType::F32 || dtype == DType::F64) {
    // No fast-math: expf, sinf... are the accurate CUDA functions, sqrtf is
    // correctly rounded (--prec-sqrt=true), fmaf rounds once.
    static constexpr std::pair<kir::Intrinsic, const char *> kNames[] = {
        {kir::Intrinsic::Exp, "exp"},     {kir::Intrinsic::Log, "log"},
        {kir::Intrinsic::Sqrt, "sqrt"},   {kir::Intrinsic::Rsqrt, "rsqrt"},
        {kir::Intrinsic::Tanh, "tanh"},   {kir::Intrinsic::Erf, "erf"},
        {kir::Intrinsic::Sin, "sin"},     {kir::Intrinsic::Cos, "cos"},
        {kir::Intrinsic::Abs, "fabs"},    {kir::Intrinsic::Floor, "floor"},
        {kir::Intrinsic::Pow, "pow"},     {kir::Intrinsic::Fma, "fma"}};
    for (auto [fn, name] : kNames)
      if (fn == call.fn)
        function = std::string(name) + (dtype == DType::F32 ? "f" : "");
  }
  if (function.empty())
    return fail(ErrorCode::Unsupported,
                fmt::format("{} on {}", kir::intrinsicName(call.fn), dtypeName(dtype)));
  std::vector<CCode> result;
  for (size_t k = 0; k < static_cast<size_t>(call.type().lanes); ++k) {
    std::vector<std::string> texts;
    for (const std::vector<CCode> &arg : args)
      texts.push_back(arg[k].text);
    result.push_back({fmt::format("{}({})", function, fmt::join(texts, ", ")), kPrimary});
  }
  return result;
}

Expected<std::vector<CCode>> CudaEmitter::emitLoad(const kir::Load &load) {
  auto found = bufferNames_.find(load.buffer.get());
  KILN_CHECK(found != bufferNames_.end(), "the verifier admits loads from buffers in scope only");
  const std::string &buffer = found->second;
  DType dtype = load.buffer->dtype;
  int lanes = load.type().lanes;
  KILN_TRY(CCode index, emitScalar(load.index));
  std::vector<CCode> predicate;
  if (load.predicate) {
    KILN_TRY(predicate, emitLanes(load.predicate));
  }

  if (lanes == 1) {
    CCode value = fromStorage({fmt::format("{}[{}]", buffer, index.text), kPrimary}, dtype);
    if (predicate.empty())
      return std::vector<CCode>{value};
    return std::vector<CCode>{{fmt::format("{} ? {} : {}", operand(predicate[0], kTernary, true),
                                           value.text, zeroOf(dtype).text),
                               kTernary}};
  }

  std::string name = freshName(found->second + "_vec", "vec");
  std::string storage = storageCType(dtype);
  std::optional<std::string> vectorType = vectorCType(dtype, lanes);
  if (vectorType && predicate.size() <= 1) {
    // One vector value in registers (never an array whose address is taken,
    // which can put it in local memory). GPU kernels index vector accesses at
    // multiples of the lane count, so the address is aligned to the access size.
    std::string access = fmt::format("kiln_load<{}>(&{}[{}])", *vectorType, buffer, index.text);
    if (!predicate.empty())
      access = fmt::format("{} ? {} : {}{{}}", operand(predicate[0], kTernary, true), access, *vectorType);
    line(fmt::format("const {} {} = {};", *vectorType, name, access));
    std::vector<CCode> result;
    for (int k = 0; k < lanes; ++k)
      result.push_back(fromStorage(vectorLane(name, dtype, lanes, k), dtype));
    return result;
  }
  // Otherwise element by element into an array with constant indices.
  bool zeroFirst = !predicate.empty();
  line(fmt::format("{} {}[{}]{};", storage, name, lanes, zeroFirst ? " = {}" : ""));
  index.isInt = false; // index + k may pass int's range where index does not
  index = materialize(index, DType::I64, "index");
  for (int k = 0; k < lanes; ++k) {
    std::string copy = fmt::format("{}[{}] = {}[{} + {}];", name, k, buffer, index.text, k);
    if (predicate.empty())
      line(copy);
    else
      line(fmt::format("if ({}) {}", predicate.size() == 1 ? predicate[0].text : predicate[k].text, copy));
  }
  std::vector<CCode> result;
  for (int k = 0; k < lanes; ++k)
    result.push_back(fromStorage({fmt::format("{}[{}]", name, k), kPrimary}, dtype));
  return result;
}

Expected<CCode> CudaEmitter::emitShuffle(const kir::Shuffle &shuffle) {
  DType dtype = shuffle.type().dtype;
  if (!(dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I32 || dtype == DType::I64) ||
      shuffle.type().lanes != 1)
    return fail(ErrorCode::Unsupported, fmt::format("a warp shuffle of {}", dtypeName(dtype)));
  KILN_TRY(CCode value, emitScalar(shuffle.value));
  KILN_TRY(CCode lane, emitScalar(shuffle.lane));
  const char *function = "__shfl_sync";
  switch (shuffle.mode) {
  case kir::ShuffleMode::Xor: function = "__shfl_xor_sync"; break;
  case kir::ShuffleMode::Down: function = "__shfl_down_sync"; break;
  case kir::ShuffleMode::Up: function = "__shfl_up_sync"; break;
  case kir::ShuffleMode::Idx: function = "__shfl_sync"; break;
  }
  // Its own statement, so every thread of the warp executes it (never inside
  // a ?: arm or behind a store's predicate).
  std::string name = freshName("shuffled", "shuffled");
  line(fmt::format("const {} {} = {}(0xffffffffu, {}, {}, 32);", registerCType(dtype), name,
                   function, value.text, lane.text));
  return CCode{name, kPrimary};
}

Expected<CCode> CudaEmitter::emitCast(CCode value, DType from, DType to) {
  if (from == to)
    return value;
  // Narrow floats widen to f32 exactly; what follows rounds once.
  if (kir::isNarrowFloat(from)) {
    value = callOf(fmt::format("kiln_{}_to_f32", narrowName(from)), {&value});
    from = DType::F32;
    if (to == DType::F32)
      return value;
  }
  if (kir::isNarrowFloat(to)) {
    if (isInteger(from)) {
      // Through f64, as the reference holds values: one rounding to the narrow type.
      value = castTo("double", value);
      from = DType::F64;
    } else if (from == DType::Bool) {
      value = castTo("float", value);
      from = DType::F32;
    }
    return callOf(fmt::format("kiln_{}_to_{}", from == DType::F32 ? "f32" : "f64", narrowName(to)),
                  {&value});
  }
  bool fromFloat = from == DType::F32 || from == DType::F64;
  bool toFloat = to == DType::F32 || to == DType::F64;
  if (toFloat)
    return castTo(registerCType(to), value); // rounds to nearest even; bools give 0 or 1
  if (to == DType::Bool)
    return infix(value, "!=", fromFloat ? *floatLiteral(0.0, from) : CCode{"0", kPrimary}, 10);
  if (fromFloat) {
    // Truncate, saturate, NaN -> 0: what cvt.rzi does for every integer width.
    bool f32 = from == DType::F32;
    switch (to) {
    case DType::I32: return callOf(f32 ? "__float2int_rz" : "__double2int_rz", {&value});
    case DType::I64: return callOf(f32 ? "__float2ll_rz" : "__double2ll_rz", {&value});
    case DType::I8: return callOf(f32 ? "kiln_f32_to_i8" : "kiln_f64_to_i8", {&value});
    default: break;
    }
  }
  if (isInteger(to) && (isInteger(from) || from == DType::Bool))
    return castTo(registerCType(to), value); // wraps (two's complement)
  return fail(ErrorCode::Unsupported,
              fmt::format("cast from {} to {}", dtypeName(from), dtypeName(to)));
}

} // namespace kiln::codegen::cuda
