// Parsing the GPU statements of kernel IR: atomics, and the target instructions (mma,
// ldmatrix, cp.async, wgmma, mbarriers, bulk tensor copies with their tensor maps) from their
// signatures, each checked before it is built with the rules its checked constructor holds it
// to (the *Problem functions), as errors.
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/ParserCore.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/VerifierGpuStatements.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace kiln::kir::text {

namespace {

constexpr AtomicOp kAtomicOps[] = {AtomicOp::Add, AtomicOp::Max, AtomicOp::Min};

/// The largest tensor map dimension or stride the parser takes (the hardware's strides stop
/// below 2^40 bytes).
constexpr int64_t kMaxTensorMapExtent = int64_t{1} << 40;

/// What tensorMapProblem cannot be asked about without overflowing its 64-bit arithmetic: a
/// dimension or stride out of [1, 2^40], or a last element past the tensor's buffer
/// (computed here with overflow checks).
std::optional<std::string> tensorMapRangeProblem(const TensorMap &map) {
  for (const std::vector<int64_t> *list : {&map.dims, &map.strides})
    for (int64_t value : *list)
      if (value < 1 || value > kMaxTensorMapExtent)
        return fmt::format("tensor map {}: dimensions and strides are 1 to 2^40, not {}",
                           map.name, value);
  if (map.dims.empty() || map.strides.size() + 1 != map.dims.size())
    return std::nullopt; // tensorMapProblem names the rank mismatch
  // An overflow is a span past any buffer: no size reaches 2^63.
  int64_t last = map.dims[0] - 1;
  bool overflow = false;
  for (size_t d = 1; d < map.dims.size(); ++d) {
    int64_t term = 0;
    overflow = overflow || __builtin_mul_overflow(map.dims[d] - 1, map.strides[d - 1], &term) ||
               __builtin_add_overflow(last, term, &last);
  }
  if (overflow || last >= map.global->size)
    return fmt::format("tensor map {}: spans more than the {} elements of {}", map.name,
                       map.global->size, map.global->name);
  return std::nullopt;
}

} // namespace

Expected<StmtPtr> KernelTextParser::parseAtomic() {
  const Token &keyword = advance();
  const Token &opToken = peek();
  KILN_TRY(std::string opName, expectName("an atomic operation (add, max, min)"));
  auto op = std::ranges::find(kAtomicOps, opName, atomicOpName);
  if (op == std::end(kAtomicOps))
    return errorAt(opToken, fmt::format("unknown atomic operation '{}'", opName));
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY(ExprPtr index, parseSubscript("an atomic's index"));
  KILN_TRY(const Token *arrow, expect("<"));
  // "<-" is two tokens (so that "a<-1" compares); here they must touch.
  if (!peek().is("-") || peek().line != arrow->line || peek().column != arrow->column + 1)
    return expected("'<-'");
  advance();
  KILN_TRY(ExprPtr value, parseExprOfType(type, "an atomic's value"));
  if (std::optional<std::string> problem = atomicProblem(*op, *buffer, type))
    return errorAt(keyword, *problem);
  return std::make_shared<Atomic>(*op, std::move(buffer), std::move(index), std::move(value));
}

Expected<Fragment> KernelTextParser::parseFragment() {
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY_VOID(expect("["));
  KILN_TRY(int64_t offset, expectInteger("a fragment offset"));
  KILN_TRY_VOID(expect(":"));
  KILN_TRY_VOID(expect("]"));
  return Fragment{std::move(buffer), offset};
}

Expected<SharedMatrix> KernelTextParser::parseSharedMatrix() {
  SharedMatrix matrix;
  KILN_TRY(matrix.buffer, expectBufferName());
  KILN_TRY(matrix.start, parseSubscript("a wgmma operand's start"));
  if (accept("mn"))
    matrix.mnMajor = true;
  else if (!accept("k"))
    return expected("'k' or 'mn' (the operand's major dimension)");
  if (!accept("lbo"))
    return expected("'lbo='");
  KILN_TRY_VOID(expect("="));
  KILN_TRY(matrix.leadingBytes, expectInteger("a leading byte offset"));
  if (!accept("sbo"))
    return expected("'sbo='");
  KILN_TRY_VOID(expect("="));
  KILN_TRY(matrix.strideBytes, expectInteger("a stride byte offset"));
  return matrix;
}

Expected<std::vector<int64_t>> KernelTextParser::parseIntegerList() {
  KILN_TRY_VOID(expect("["));
  std::vector<int64_t> values;
  while (!accept("]")) {
    if (!values.empty())
      KILN_TRY_VOID(expect(","));
    if (values.size() >= kTensorMapMaxRank)
      return errorAt(peek(), fmt::format("a tensor map has at most {} dimensions",
                                         kTensorMapMaxRank));
    KILN_TRY(int64_t value, expectInteger("an integer"));
    values.push_back(value);
  }
  return values;
}

Expected<TensorMapPtr> KernelTextParser::parseTensorMap() {
  const Token &nameToken = peek();
  KILN_TRY(std::string name, expectName("a tensor map name"));
  KILN_TRY_VOID(expect("("));
  auto map = std::make_shared<TensorMap>();
  map->name = name;
  KILN_TRY(map->global, expectBufferName());
  for (auto [keyword, list] : {std::pair{"dims", &map->dims}, std::pair{"strides", &map->strides},
                               std::pair{"box", &map->box}}) {
    if (!accept(keyword))
      return expected(fmt::format("'{}'", keyword));
    KILN_TRY(*list, parseIntegerList());
  }
  if (!accept("swizzle"))
    return expected("'swizzle'");
  if (accept("none"))
    map->swizzle = TmaSwizzle::None;
  else if (peek().kind == TokenKind::Number &&
           peek().spelling == tmaSwizzleName(TmaSwizzle::Bytes128)) {
    advance();
    map->swizzle = TmaSwizzle::Bytes128;
  } else {
    return expected("a swizzle (none, 128B)");
  }
  KILN_TRY_VOID(expect(")"));
  std::optional<std::string> problem = tensorMapRangeProblem(*map);
  if (!problem)
    problem = tensorMapProblem(*map);
  if (problem)
    return errorAt(nameToken, *problem);
  // One name is one map: a later use repeats its description.
  auto [it, fresh] = maps_.try_emplace(name, MapBinding{map, &nameToken});
  if (!fresh) {
    const TensorMap &first = *it->second.map;
    if (first.global != map->global || first.dims != map->dims ||
        first.strides != map->strides || first.box != map->box || first.swizzle != map->swizzle)
      return errorAt(nameToken,
                     fmt::format("tensor map '{}' differs from its first description at {}:{}",
                                 name, it->second.first->line, it->second.first->column));
  }
  return it->second.map;
}

Expected<TargetOperand> KernelTextParser::parseOperand(OperandKind kind, std::string_view what) {
  switch (kind) {
  case OperandKind::Bool:
    if (accept("true"))
      return int64_t{1};
    if (accept("false"))
      return int64_t{0};
    return expected("true or false");
  case OperandKind::Index:
  case OperandKind::OptionalIndex: return parseIndex(what);
  case OperandKind::Predicate: return parseExprOfType(Type::boolean(), what);
  case OperandKind::Buffer: return expectBufferName();
  case OperandKind::Fragment: return parseFragment();
  case OperandKind::SharedMatrix: return parseSharedMatrix();
  case OperandKind::TensorMap: return parseTensorMap();
  case OperandKind::Indices: {
    KILN_TRY_VOID(expect("["));
    std::vector<ExprPtr> exprs;
    while (!accept("]")) {
      if (!exprs.empty())
        KILN_TRY_VOID(expect(","));
      if (exprs.size() >= kTensorMapMaxRank)
        return errorAt(peek(), fmt::format("{} has at most {} indices", what, kTensorMapMaxRank));
      KILN_TRY(ExprPtr e, parseIndex(what));
      exprs.push_back(std::move(e));
    }
    return exprs;
  }
  default: break;
  }
  if (enumSize(kind) == 0)
    return expectInteger(what);
  const Token &token = peek();
  KILN_TRY(std::string name, expectName(what));
  for (int64_t value = 0; value < enumSize(kind); ++value)
    if (enumName(kind, value) == name)
      return value;
  return errorAt(token, fmt::format("unknown {} '{}'", what, name));
}

Expected<StmtPtr> KernelTextParser::parseTargetInstr(TargetOp op) {
  const Token &keyword = advance();
  const TargetInstrInfo &info = targetInstrInfo(op);
  std::vector<TargetOperand> operands;
  bool first = true;
  for (const OperandSpec &spec : info.operands) {
    // `role=value`, comma-separated on the keyword's line; an absent optional one is skipped.
    bool present = peek().line == keyword.line &&
                   (first ? peek().is(spec.role) : peek().is(",") && peek(1).is(spec.role));
    if (!present && isOptional(spec.kind)) {
      operands.emplace_back(ExprPtr());
      continue;
    }
    if (!first)
      KILN_TRY_VOID(expect(","));
    if (!accept(spec.role))
      return expected(fmt::format("'{}=' ({}'s next operand)", spec.role, info.name));
    KILN_TRY_VOID(expect("="));
    const Token &valueToken = peek();
    std::string what = fmt::format("{} {}", info.name, spec.role);
    KILN_TRY(TargetOperand value, parseOperand(spec.kind, what));
    if (spec.kind == OperandKind::Int && (std::get<int64_t>(value) < INT32_MIN ||
                                          std::get<int64_t>(value) > INT32_MAX))
      return errorAt(valueToken, fmt::format("{} is out of range", what));
    operands.push_back(std::move(value));
    first = false;
  }
  if (std::optional<std::string> problem = targetInstrProblem(op, operands))
    return errorAt(keyword, *problem);
  return std::make_shared<TargetInstr>(op, std::move(operands));
}

} // namespace kiln::kir::text
