// Parsing kernel IR statements and kernels, the names in scope, and the entry
// points of ir/kernel/Parser.h. The GPU statements are checked with the rules
// their builders assert (or the *Problem functions they call), as errors.
#include "ir/kernel/Parser.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/ParserCore.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

namespace kiln::kir::text {

namespace {

constexpr ForKind kForKinds[] = {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized,
                                 ForKind::Parallel, ForKind::BlockX,  ForKind::BlockY,
                                 ForKind::BlockZ,   ForKind::ThreadX, ForKind::ThreadY,
                                 ForKind::ThreadZ};
constexpr MemScope kScopes[] = {MemScope::Global, MemScope::Local, MemScope::Shared,
                                MemScope::Register};
constexpr MmaKind kMmaKinds[] = {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16,
                                 MmaKind::TF32_M16N8K8, MmaKind::E4M3_M16N8K32};
constexpr WgmmaKind kWgmmaKinds[] = {WgmmaKind::F16_K16, WgmmaKind::BF16_K16, WgmmaKind::TF32_K8,
                                     WgmmaKind::E4M3_K32};
constexpr AtomicOp kAtomicOps[] = {AtomicOp::Add, AtomicOp::Max, AtomicOp::Min};
constexpr MbarrierOp kMbarrierOps[] = {MbarrierOp::Init, MbarrierOp::Arrive,
                                       MbarrierOp::ArriveExpectTx, MbarrierOp::Wait};
constexpr WgmmaSyncOp kWgmmaSyncOps[] = {WgmmaSyncOp::Fence, WgmmaSyncOp::SharedFence,
                                         WgmmaSyncOp::Commit};

std::string describe(const Buffer &buffer) {
  return fmt::format("{}[{}] {}", dtypeName(buffer.dtype), buffer.size, memScopeName(buffer.scope));
}

/// A let or alloc without braces of its own, waiting for the rest of its statement list.
struct OpenScope {
  std::vector<StmtPtr> before; ///< the statements of the list before it
  VarPtr var;                  ///< a let's variable, or
  BufferPtr buffer;            ///< an alloc's buffer
  ExprPtr value;               ///< a let's value
};

/// The largest tensor map dimension or stride the parser takes (the hardware's strides stop
/// below 2^40 bytes).
constexpr int64_t kMaxTensorMapExtent = int64_t{1} << 40;

/// What tensorMapProblem cannot be asked about without overflowing its 64-bit arithmetic: a
/// dimension or stride out of [1, 2^40], or a last element past the tensor's buffer
/// (computed here in 128 bits).
std::optional<std::string> tensorMapRangeProblem(const TensorMap &map) {
  for (const std::vector<int64_t> *list : {&map.dims, &map.strides})
    for (int64_t value : *list)
      if (value < 1 || value > kMaxTensorMapExtent)
        return fmt::format("tensor map {}: dimensions and strides are 1 to 2^40, not {}",
                           map.name, value);
  if (map.dims.empty() || map.strides.size() + 1 != map.dims.size())
    return std::nullopt; // tensorMapProblem names the rank mismatch
  __int128 last = map.dims[0] - 1;
  for (size_t d = 1; d < map.dims.size(); ++d)
    last += static_cast<__int128>(map.dims[d] - 1) * map.strides[d - 1];
  if (last >= map.global->size)
    return fmt::format("tensor map {}: spans more than the {} elements of {}", map.name,
                       map.global->size, map.global->name);
  return std::nullopt;
}

/// A body as the builders make one (kir::seq): a lone statement as itself, so passes see
/// the same trees as for built kernels. A lone nested block stays wrapped: alone, it would
/// print without its braces.
StmtPtr makeBody(std::vector<StmtPtr> stmts) {
  if (stmts.size() == 1 && stmts.front()->kind() != StmtKind::Block)
    return std::move(stmts.front());
  return std::make_shared<Block>(std::move(stmts));
}

} // namespace

// ---- Tokens and errors -------------------------------------------------------------------------

const Token &KernelTextParser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token &KernelTextParser::advance() {
  const Token &token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size())
    ++pos_;
  return token;
}

bool KernelTextParser::accept(std::string_view text) {
  if (!peek().is(text))
    return false;
  advance();
  return true;
}

Expected<const Token *> KernelTextParser::expect(std::string_view text) {
  if (!peek().is(text))
    return expected(fmt::format("'{}'", text));
  return &advance();
}

std::unexpected<Error> KernelTextParser::errorAt(const Token &token, std::string message) const {
  return makeError(ErrorCode::ParseError, std::move(message),
                   Location{fileName_, token.line, token.column});
}

std::unexpected<Error> KernelTextParser::expected(std::string_view what) const {
  return errorAt(peek(), fmt::format("expected {}, found {}", what, describeToken(peek())));
}

Expected<std::string> KernelTextParser::expectName(std::string_view what) {
  if (peek().kind != TokenKind::Identifier)
    return expected(what);
  return std::string(advance().spelling);
}

Expected<int64_t> KernelTextParser::expectInteger(std::string_view what) {
  bool negative = peek().is("-") && peek(1).kind == TokenKind::Number;
  const Token &token = peek(negative ? 1 : 0);
  if (token.kind != TokenKind::Number || !token.suffix.empty() ||
      token.number.find_first_of(".eE") != std::string_view::npos)
    return expected(what);
  uint64_t magnitude = 0;
  auto [end, error] =
      std::from_chars(token.number.data(), token.number.data() + token.number.size(), magnitude);
  if (error != std::errc() || magnitude > (uint64_t{1} << 62))
    return errorAt(token, fmt::format("{} {} is out of range", what, token.spelling));
  if (negative)
    advance();
  advance();
  return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<Type> KernelTextParser::typeNamed(std::string_view text) {
  if (std::optional<DType> dtype = parseDType(text))
    return Type::scalar(*dtype);
  size_t x = text.rfind('x');
  if (x == std::string_view::npos || x + 1 == text.size())
    return std::nullopt;
  std::string_view lanesText = text.substr(x + 1);
  int lanes = 0;
  auto [end, error] = std::from_chars(lanesText.data(), lanesText.data() + lanesText.size(), lanes);
  std::optional<DType> dtype = parseDType(text.substr(0, x));
  if (!dtype || error != std::errc() || end != lanesText.data() + lanesText.size() ||
      lanesText.front() == '0' || lanes < 2 || lanes > kMaxLanes)
    return std::nullopt;
  return Type{*dtype, lanes};
}

Expected<DType> KernelTextParser::expectDType() {
  std::optional<DType> dtype;
  if (peek().kind == TokenKind::Identifier)
    dtype = parseDType(peek().spelling);
  if (!dtype)
    return expected("a dtype (f32, i64, bf16, ...)");
  advance();
  return *dtype;
}

Expected<Type> KernelTextParser::expectType() {
  std::optional<Type> type;
  if (peek().kind == TokenKind::Identifier)
    type = typeNamed(peek().spelling);
  if (!type)
    return expected(fmt::format("a type (f32, i64, f32x8, boolx4, at most {} lanes)", kMaxLanes));
  advance();
  return *type;
}

// ---- Names in scope ----------------------------------------------------------------------------

Expected<VarPtr> KernelTextParser::lookUpVar(const Token &name) const {
  auto it = vars_.find(std::string(name.spelling));
  if (it == vars_.end() || !it->second.inScope)
    return errorAt(name, fmt::format("undefined variable '{}'", name.spelling));
  return it->second.var;
}

Expected<BufferPtr> KernelTextParser::lookUpBuffer(const Token &name) const {
  auto it = buffers_.find(std::string(name.spelling));
  if (it == buffers_.end() || !it->second.inScope)
    return errorAt(name, fmt::format("undefined buffer '{}'", name.spelling));
  return it->second.buffer;
}

Expected<BufferPtr> KernelTextParser::expectBufferName() {
  if (peek().kind != TokenKind::Identifier)
    return expected("a buffer name");
  KILN_TRY(BufferPtr buffer, lookUpBuffer(peek()));
  advance();
  return buffer;
}

Expected<VarPtr> KernelTextParser::bindVar(const Token &name, Type type) {
  std::string key(name.spelling);
  auto [it, fresh] = vars_.try_emplace(key, VarBinding{std::make_shared<Var>(Var{key, type}), true});
  VarBinding &binding = it->second;
  if (!fresh) {
    if (binding.inScope)
      return errorAt(name, fmt::format("variable '{}' is already bound here", key));
    if (binding.var->type != type)
      return errorAt(name, fmt::format("variable '{}' was bound before as {}, here as {} (one "
                                       "name is one variable)",
                                       key, typeName(binding.var->type), typeName(type)));
    binding.inScope = true;
  }
  return binding.var;
}

void KernelTextParser::unbindVar(const std::string &name) { vars_[name].inScope = false; }

Expected<BufferPtr> KernelTextParser::bindBuffer(const Token &name, DType dtype, int64_t size,
                                                 MemScope scope) {
  std::string key(name.spelling);
  auto buffer = std::make_shared<Buffer>(Buffer{key, dtype, size, scope});
  auto [it, fresh] = buffers_.try_emplace(key, BufferBinding{buffer, true});
  BufferBinding &binding = it->second;
  if (!fresh) {
    if (binding.inScope)
      return errorAt(name, fmt::format("buffer '{}' is already defined here", key));
    if (describe(*binding.buffer) != describe(*buffer))
      return errorAt(name, fmt::format("buffer '{}' was allocated before as {}, here as {} (one "
                                       "name is one buffer)",
                                       key, describe(*binding.buffer), describe(*buffer)));
    binding.inScope = true;
  }
  return binding.buffer;
}

void KernelTextParser::unbindBuffer(const std::string &name) { buffers_[name].inScope = false; }

// ---- Statements --------------------------------------------------------------------------------

Expected<std::vector<StmtPtr>> KernelTextParser::parseStatementList() {
  // Unbraced lets and allocs nest the rest of the list; they are collected here rather than
  // by recursion, so a long run of them cannot exhaust the stack.
  std::vector<OpenScope> open;
  std::vector<StmtPtr> stmts;
  std::vector<std::string> boundVars, boundBuffers;
  while (!peek().is("}")) {
    if (atEnd())
      return expected("'}'");
    const Token &keyword = peek();
    if (keyword.is("let") || keyword.is("alloc")) {
      advance();
      const Token &nameToken = peek();
      KILN_TRY(std::string name, expectName(keyword.is("let") ? "a variable name"
                                                                : "a buffer name"));
      OpenScope scope;
      if (keyword.is("let")) {
        Type type = Type::index();
        if (accept(":")) {
          KILN_TRY(type, expectType());
        }
        KILN_TRY_VOID(expect("="));
        const Token &valueToken = peek();
        // The value is parsed before the name is bound: it cannot see its own variable.
        KILN_TRY(scope.value, parseExpr());
        if (scope.value->type() != type)
          return errorAt(valueToken, fmt::format("let '{}' is {}, its value {}", name,
                                                 typeName(type), typeName(scope.value->type())));
        KILN_TRY(scope.var, bindVar(nameToken, type));
      } else {
        KILN_TRY_VOID(expect(":"));
        KILN_TRY(DType dtype, expectDType());
        KILN_TRY_VOID(expect("["));
        const Token &sizeToken = peek();
        KILN_TRY(int64_t size, expectInteger("a buffer size"));
        KILN_TRY_VOID(expect("]"));
        if (size < 0)
          return errorAt(sizeToken, fmt::format("buffer '{}' has a negative size", name));
        const Token &scopeToken = peek();
        KILN_TRY(std::string scopeName, expectName("a memory scope (local, shared, register)"));
        auto memScope = std::ranges::find(kScopes, scopeName, memScopeName);
        if (memScope == std::end(kScopes) || *memScope == MemScope::Global)
          return errorAt(scopeToken, fmt::format("an alloc's scope is local, shared or register, "
                                                 "not '{}'",
                                                 scopeName));
        KILN_TRY(scope.buffer, bindBuffer(nameToken, dtype, size, *memScope));
      }
      // Braces on the let's own line scope it over them alone; without, over the rest.
      if (peek().is("{") && peek().line == keyword.line) {
        KILN_TRY(StmtPtr body, parseBody());
        if (scope.var) {
          unbindVar(name);
          stmts.push_back(std::make_shared<Let>(scope.var, scope.value, std::move(body)));
        } else {
          unbindBuffer(name);
          stmts.push_back(std::make_shared<Allocate>(scope.buffer, std::move(body)));
        }
        continue;
      }
      (scope.var ? boundVars : boundBuffers).push_back(name);
      if (++depth_ > kMaxNesting)
        return errorAt(keyword, tooDeepMessage());
      scope.before = std::move(stmts);
      stmts.clear();
      open.push_back(std::move(scope));
      continue;
    }
    KILN_TRY(StmtPtr stmt, parseStatement());
    stmts.push_back(std::move(stmt));
  }
  for (auto scope = open.rbegin(); scope != open.rend(); ++scope) {
    StmtPtr body = makeBody(std::move(stmts));
    stmts = std::move(scope->before);
    if (scope->var)
      stmts.push_back(std::make_shared<Let>(scope->var, scope->value, std::move(body)));
    else
      stmts.push_back(std::make_shared<Allocate>(scope->buffer, std::move(body)));
  }
  depth_ -= static_cast<int>(open.size());
  for (const std::string &name : boundVars)
    unbindVar(name);
  for (const std::string &name : boundBuffers)
    unbindBuffer(name);
  return stmts;
}

Expected<StmtPtr> KernelTextParser::parseBody() {
  KILN_TRY(StmtPtr block, parseBracedBlock());
  return makeBody(static_cast<const Block &>(*block).stmts);
}

Expected<StmtPtr> KernelTextParser::parseBracedBlock() {
  const Token &open = peek();
  KILN_TRY_VOID(expect("{"));
  NestingGuard guard(depth_);
  if (guard.tooDeep())
    return errorAt(open, tooDeepMessage());
  KILN_TRY(std::vector<StmtPtr> stmts, parseStatementList());
  advance(); // '}'
  return std::make_shared<Block>(std::move(stmts));
}

Expected<StmtPtr> KernelTextParser::parseStatement() {
  const Token &keyword = peek();
  std::string_view word = keyword.spelling;
  if (keyword.is("{"))
    return parseBracedBlock();
  if (keyword.kind != TokenKind::Identifier)
    return expected("a statement");
  if (word == "for")
    return parseFor();
  if (word == "if")
    return parseIf();
  if (word == "store")
    return parseStore();
  if (word == "atomic")
    return parseAtomic();
  if (word == "async_copy")
    return parseAsyncCopy();
  if (word == "tma_load")
    return parseTmaLoad();
  if (word.starts_with("mma."))
    return parseMma(advance());
  if (word.starts_with("ldmatrix."))
    return parseLdMatrix(advance());
  if (word.starts_with("wgmma."))
    return parseWgmma(advance());
  if (word.starts_with("mbarrier_"))
    return parseMbarrier(advance());
  advance();
  if (word == "eval") {
    KILN_TRY(ExprPtr value, parseExpr());
    return std::make_shared<Evaluate>(std::move(value));
  }
  if (word == "barrier")
    return std::make_shared<Barrier>();
  if (word == "async_commit")
    return std::make_shared<AsyncCommit>();
  if (word == "async_wait" || word == "wgmma_wait") {
    const Token &countToken = peek();
    KILN_TRY(int64_t pending, expectInteger("a count of pending groups"));
    if (pending < 0 || pending > 7)
      return errorAt(countToken, fmt::format("{} allows 0 to 7 pending groups, not {}", word,
                                             pending));
    if (word == "async_wait")
      return std::make_shared<AsyncWait>(static_cast<int>(pending));
    return std::make_shared<WgmmaSync>(WgmmaSyncOp::Wait, static_cast<int>(pending));
  }
  for (WgmmaSyncOp op : kWgmmaSyncOps)
    if (word == fmt::format("wgmma_{}", wgmmaSyncOpName(op)))
      return std::make_shared<WgmmaSync>(op);
  return errorAt(keyword, fmt::format("expected a statement, found {}", describeToken(keyword)));
}

Expected<StmtPtr> KernelTextParser::parseFor() {
  advance(); // for
  const Token &nameToken = peek();
  KILN_TRY(std::string name, expectName("a loop variable"));
  if (!accept("in"))
    return expected("'in'");
  const Token &rangeToken = peek();
  KILN_TRY_VOID(expect("["));
  KILN_TRY(ExprPtr begin, parseIndex("a loop's begin"));
  KILN_TRY_VOID(expect(","));
  KILN_TRY(ExprPtr end, parseIndex("a loop's end"));
  KILN_TRY_VOID(expect(")"));
  // The printer writes [b, e) for constant bounds, [0, extent) from zero, else
  // [begin, begin + extent).
  ExprPtr extent;
  auto constBegin = as<IntImm>(*begin);
  auto constEnd = as<IntImm>(*end);
  auto sum = as<Binary>(*end);
  if (constBegin && constEnd)
    extent = std::make_shared<IntImm>(
        static_cast<int64_t>(static_cast<uint64_t>(constEnd->value) -
                             static_cast<uint64_t>(constBegin->value)),
        Type::index());
  else if (constBegin && constBegin->value == 0)
    extent = end;
  else if (sum && sum->op == BinaryOp::Add && printExpr(sum->lhs) == printExpr(begin))
    extent = sum->rhs;
  else
    return errorAt(rangeToken, fmt::format("a loop's range is [begin, end) with constant bounds, "
                                           "[0, extent) or [begin, begin + extent), not [{}, {})",
                                           printExpr(begin), printExpr(end)));
  const Token &kindToken = peek();
  KILN_TRY(std::string kindName, expectName("a loop kind (serial, thread.x, ...)"));
  auto kind = std::ranges::find(kForKinds, kindName, forKindName);
  if (kind == std::end(kForKinds))
    return errorAt(kindToken, fmt::format("unknown loop kind '{}'", kindName));
  KILN_TRY(VarPtr var, bindVar(nameToken, Type::index()));
  KILN_TRY(StmtPtr body, parseBody());
  unbindVar(name);
  return std::make_shared<For>(std::move(var), std::move(begin), std::move(extent), *kind,
                               std::move(body));
}

Expected<StmtPtr> KernelTextParser::parseIf() {
  advance(); // if
  KILN_TRY(ExprPtr cond, parseExprOfType(Type::boolean(), "an if's condition"));
  KILN_TRY(StmtPtr thenBody, parseBody());
  StmtPtr elseBody;
  if (accept("else")) {
    KILN_TRY(elseBody, parseBody());
  }
  return std::make_shared<If>(std::move(cond), std::move(thenBody), std::move(elseBody));
}

Expected<ExprPtr> KernelTextParser::parseTrailingPredicate(const Token &statement,
                                                           std::string_view what) {
  // Only on the statement's line: an `if` on the next line starts an if statement.
  if (!peek().is("if") || peek().line != statement.line)
    return ExprPtr(nullptr);
  advance();
  return parseExprOfType(Type::boolean(), what);
}

Expected<StmtPtr> KernelTextParser::parseStore() {
  const Token &keyword = advance();
  const Token &typeToken = peek();
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr buffer, expectBufferName());
  if (type.dtype != buffer->dtype)
    return errorAt(typeToken, fmt::format("store of {} into buffer '{}' of {}", typeName(type),
                                          buffer->name, dtypeName(buffer->dtype)));
  KILN_TRY(ExprPtr index, parseSubscript("a store index"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(ExprPtr value, parseExprOfType(type, "the stored value"));
  // A vector store may take a per-lane predicate: a bool scalar or of its lanes.
  ExprPtr predicate;
  if (peek().is("if") && peek().line == keyword.line) {
    const Token &ifToken = advance();
    KILN_TRY(predicate, parseExpr());
    const Type &p = predicate->type();
    if (p.dtype != DType::Bool || (p.lanes != 1 && p.lanes != type.lanes))
      return errorAt(ifToken, fmt::format("a store's predicate is a bool scalar or a bool vector "
                                          "of its lanes, not {}",
                                          typeName(p)));
  }
  return std::make_shared<Store>(std::move(buffer), std::move(index), std::move(value),
                                 std::move(predicate));
}

Expected<StmtPtr> KernelTextParser::parseAtomic() {
  const Token &keyword = advance();
  const Token &opToken = peek();
  KILN_TRY(std::string opName, expectName("an atomic operation (add, max, min)"));
  auto op = std::ranges::find(kAtomicOps, opName, atomicOpName);
  if (op == std::end(kAtomicOps))
    return errorAt(opToken, fmt::format("unknown atomic operation '{}'", opName));
  const Token &typeToken = peek();
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY(ExprPtr index, parseSubscript("an atomic's index"));
  KILN_TRY(const Token *arrow, expect("<"));
  // "<-" is two tokens (so that "a<-1" compares); here they must touch.
  if (!peek().is("-") || peek().line != arrow->line || peek().column != arrow->column + 1)
    return expected("'<-'");
  advance();
  KILN_TRY(ExprPtr value, parseExprOfType(type, "an atomic's value"));
  DType dtype = buffer->dtype;
  if (type != Type::scalar(dtype))
    return errorAt(typeToken, fmt::format("atomic of {} into buffer '{}' of {}", typeName(type),
                                          buffer->name, dtypeName(dtype)));
  if (buffer->scope != MemScope::Global && buffer->scope != MemScope::Shared)
    return errorAt(keyword, fmt::format("atomics update global or shared buffers; '{}' is {}",
                                        buffer->name, memScopeName(buffer->scope)));
  bool integer = dtype == DType::I32 || dtype == DType::I64;
  if (!integer && !(*op == AtomicOp::Add && (dtype == DType::F32 || dtype == DType::F64)))
    return errorAt(opToken, fmt::format("atomic {} is not defined on {}", opName, dtypeName(dtype)));
  return std::make_shared<Atomic>(*op, std::move(buffer), std::move(index), std::move(value));
}

Expected<Fragment> KernelTextParser::parseFragment(DType dtype, int64_t count,
                                                   std::string_view what) {
  const Token &nameToken = peek();
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY_VOID(expect("["));
  KILN_TRY(int64_t offset, expectInteger("a fragment offset"));
  KILN_TRY_VOID(expect(":"));
  KILN_TRY_VOID(expect("]"));
  if (buffer->scope != MemScope::Register || buffer->dtype != dtype)
    return errorAt(nameToken, fmt::format("{} must be a register buffer of {}; '{}' is {}", what,
                                          dtypeName(dtype), buffer->name, describe(*buffer)));
  if (offset < 0 || offset > buffer->size - count)
    return errorAt(nameToken, fmt::format("{} {}[{}, {}) is outside its {} elements", what,
                                          buffer->name, offset, offset + count, buffer->size));
  return Fragment{std::move(buffer), offset};
}

Expected<StmtPtr> KernelTextParser::parseMma(const Token &keyword) {
  std::string_view kindName = keyword.spelling.substr(std::string_view("mma.").size());
  auto kind = std::ranges::find(kMmaKinds, kindName, mmaKindName);
  if (kind == std::end(kMmaKinds))
    return errorAt(keyword, fmt::format("unknown mma shape '{}'", kindName));
  const MmaShapeInfo &info = mmaShapeInfo(*kind);
  KILN_TRY(Fragment d, parseFragment(DType::F32, info.cElements, "mma d"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(Fragment a, parseFragment(info.operandDtype, info.aElements, "mma a"));
  KILN_TRY_VOID(expect("*"));
  KILN_TRY(Fragment b, parseFragment(info.operandDtype, info.bElements, "mma b"));
  KILN_TRY_VOID(expect("+"));
  KILN_TRY(Fragment c, parseFragment(DType::F32, info.cElements, "mma c"));
  return std::make_shared<Mma>(*kind, std::move(d), std::move(a), std::move(b), std::move(c));
}

Expected<StmtPtr> KernelTextParser::parseLdMatrix(const Token &keyword) {
  std::string_view shape = keyword.spelling.substr(std::string_view("ldmatrix.").size());
  bool transpose = shape.ends_with(".trans");
  if (transpose)
    shape.remove_suffix(std::string_view(".trans").size());
  int matrices = shape == "x1" ? 1 : shape == "x2" ? 2 : shape == "x4" ? 4 : 0;
  if (matrices == 0)
    return errorAt(keyword, fmt::format("ldmatrix loads x1, x2 or x4 matrices, not '{}'", shape));
  const Token &destinationToken = peek();
  KILN_TRY(BufferPtr destination, expectBufferName());
  KILN_TRY_VOID(expect("["));
  KILN_TRY(int64_t offset, expectInteger("a fragment offset"));
  KILN_TRY_VOID(expect(":"));
  KILN_TRY_VOID(expect("]"));
  KILN_TRY_VOID(expect("="));
  const Token &sourceToken = peek();
  KILN_TRY(BufferPtr source, expectBufferName());
  KILN_TRY(ExprPtr rowIndex, parseSubscript("an ldmatrix row index"));
  int bytes = dtypeByteSize(source->dtype);
  if (source->scope != MemScope::Shared || !(bytes == 2 || (bytes == 1 && !transpose)))
    return errorAt(sourceToken, fmt::format("ldmatrix reads a shared buffer of 16-bit elements "
                                            "(8-bit without .trans); '{}' is {}",
                                            source->name, describe(*source)));
  int64_t count = int64_t{ldMatrixElementsPerMatrix(bytes)} * matrices;
  if (destination->scope != MemScope::Register || destination->dtype != source->dtype)
    return errorAt(destinationToken,
                   fmt::format("ldmatrix destination must be a register buffer of {}; '{}' is {}",
                               dtypeName(source->dtype), destination->name,
                               describe(*destination)));
  if (offset < 0 || offset > destination->size - count)
    return errorAt(destinationToken,
                   fmt::format("ldmatrix destination {}[{}, {}) is outside its {} elements",
                               destination->name, offset, offset + count, destination->size));
  return std::make_shared<LdMatrix>(Fragment{std::move(destination), offset}, matrices, transpose,
                                    std::move(source), std::move(rowIndex));
}

Expected<StmtPtr> KernelTextParser::parseAsyncCopy() {
  const Token &keyword = advance();
  const Token &typeToken = peek();
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr destination, expectBufferName());
  KILN_TRY(ExprPtr destinationIndex, parseSubscript("an async copy's destination index"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(BufferPtr source, expectBufferName());
  KILN_TRY(ExprPtr sourceIndex, parseSubscript("an async copy's source index"));
  KILN_TRY(ExprPtr predicate, parseTrailingPredicate(keyword, "an async copy's predicate"));
  if (destination->scope != MemScope::Shared || source->scope != MemScope::Global)
    return errorAt(keyword, fmt::format("an async copy goes from a global buffer to a shared one, "
                                        "not from {} to {}",
                                        memScopeName(source->scope),
                                        memScopeName(destination->scope)));
  if (type.dtype != source->dtype || type.dtype != destination->dtype)
    return errorAt(typeToken, fmt::format("async copy of {} from '{}' ({}) into '{}' ({})",
                                          typeName(type), source->name, dtypeName(source->dtype),
                                          destination->name, dtypeName(destination->dtype)));
  int bytes = type.lanes * dtypeByteSize(type.dtype);
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return errorAt(typeToken,
                   fmt::format("an async copy moves 4, 8 or 16 bytes, not {} ({})", bytes,
                               typeName(type)));
  return std::make_shared<AsyncCopy>(std::move(destination), std::move(destinationIndex),
                                     std::move(source), std::move(sourceIndex), type.lanes,
                                     std::move(predicate));
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

Expected<StmtPtr> KernelTextParser::parseWgmma(const Token &keyword) {
  // wgmma.<kind>.n<N>, the kind itself dotted ("bf16.k16").
  std::string_view shape = keyword.spelling.substr(std::string_view("wgmma.").size());
  size_t dot = shape.rfind(".n");
  std::string_view kindName = shape.substr(0, dot);
  auto kind = std::ranges::find(kWgmmaKinds, kindName, wgmmaKindName);
  int n = 0;
  if (dot != std::string_view::npos) {
    std::string_view nText = shape.substr(dot + 2);
    auto [end, error] = std::from_chars(nText.data(), nText.data() + nText.size(), n);
    if (error != std::errc() || end != nText.data() + nText.size())
      n = 0;
  }
  if (dot == std::string_view::npos || kind == std::end(kWgmmaKinds) || n <= 0)
    return errorAt(keyword, fmt::format("expected wgmma.<kind>.n<N> (wgmma.bf16.k16.n128), found "
                                        "'{}'",
                                        keyword.spelling));
  const Token &dToken = peek();
  KILN_TRY(BufferPtr dBuffer, expectBufferName());
  KILN_TRY_VOID(expect("["));
  KILN_TRY(int64_t offset, expectInteger("a fragment offset"));
  KILN_TRY_VOID(expect(":"));
  KILN_TRY_VOID(expect("]"));
  bool accumulate = false;
  if (accept("+="))
    accumulate = true;
  else if (!accept("="))
    return expected("'=' or '+='");
  KILN_TRY(SharedMatrix a, parseSharedMatrix());
  KILN_TRY_VOID(expect("*"));
  KILN_TRY(SharedMatrix b, parseSharedMatrix());
  auto product = std::make_shared<Wgmma>(*kind, n, Fragment{std::move(dBuffer), offset},
                                         std::move(a), std::move(b), accumulate);
  if (std::optional<std::string> problem = wgmmaProblem(*product))
    return errorAt(dToken, *problem);
  return product;
}

Expected<StmtPtr> KernelTextParser::parseMbarrier(const Token &keyword) {
  std::string_view opName = keyword.spelling.substr(std::string_view("mbarrier_").size());
  auto op = std::ranges::find(kMbarrierOps, opName, mbarrierOpName);
  if (op == std::end(kMbarrierOps))
    return errorAt(keyword, fmt::format("unknown mbarrier operation '{}'", opName));
  const Token &barriersToken = peek();
  KILN_TRY(BufferPtr barriers, expectBufferName());
  if (barriers->scope != MemScope::Shared || barriers->dtype != DType::I64)
    return errorAt(barriersToken, fmt::format("mbarriers live in a shared i64 buffer; '{}' is {}",
                                              barriers->name, describe(*barriers)));
  KILN_TRY(ExprPtr index, parseSubscript("an mbarrier index"));
  int64_t count = 0;
  if (*op == MbarrierOp::Init || *op == MbarrierOp::ArriveExpectTx) {
    const Token &countToken = peek();
    KILN_TRY(count, expectInteger(*op == MbarrierOp::Init ? "an arrival count" : "a byte count"));
    int64_t least = *op == MbarrierOp::Init ? 1 : 0;
    if (count < least || count >= (int64_t{1} << 20))
      return errorAt(countToken, fmt::format("mbarrier_{} takes {} to 2^20-1, not {}", opName,
                                             least, count));
  }
  ExprPtr parity;
  if (*op == MbarrierOp::Wait) {
    if (!accept("parity"))
      return expected("'parity' (an mbarrier wait names the phase parity it waits for)");
    KILN_TRY(parity, parseIndex("an mbarrier parity"));
  }
  return std::make_shared<Mbarrier>(*op, std::move(barriers), std::move(index), count,
                                    std::move(parity));
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

Expected<StmtPtr> KernelTextParser::parseTmaLoad() {
  const Token &keyword = advance();
  KILN_TRY(BufferPtr destination, expectBufferName());
  KILN_TRY(ExprPtr destinationIndex, parseSubscript("a bulk copy's destination index"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(TensorMapPtr map, parseTensorMap());
  KILN_TRY_VOID(expect("["));
  std::vector<ExprPtr> coords;
  while (!accept("]")) {
    if (!coords.empty())
      KILN_TRY_VOID(expect(","));
    if (coords.size() >= kTensorMapMaxRank)
      return errorAt(peek(), fmt::format("a bulk copy has at most {} coordinates",
                                         kTensorMapMaxRank));
    KILN_TRY(ExprPtr coord, parseIndex("a bulk copy coordinate"));
    coords.push_back(std::move(coord));
  }
  if (!accept("on"))
    return expected("'on' (the mbarrier the copy completes on)");
  KILN_TRY(BufferPtr barriers, expectBufferName());
  KILN_TRY(ExprPtr barrierIndex, parseSubscript("an mbarrier index"));
  auto copy = std::make_shared<TmaLoad>(std::move(destination), std::move(destinationIndex),
                                        std::move(map), std::move(coords), std::move(barriers),
                                        std::move(barrierIndex));
  if (std::optional<std::string> problem = tmaLoadProblem(*copy))
    return errorAt(keyword, *problem);
  return copy;
}

// ---- Kernels -----------------------------------------------------------------------------------

Expected<Kernel> KernelTextParser::parseKernel() {
  vars_.clear();
  buffers_.clear();
  maps_.clear();
  if (!accept("kernel"))
    return expected("'kernel'");
  Kernel kernel;
  KILN_TRY(kernel.name, expectName("a kernel name"));
  KILN_TRY_VOID(expect("("));
  while (!accept(")")) {
    if (!kernel.params.empty())
      KILN_TRY_VOID(expect(","));
    const Token &nameToken = peek();
    KILN_TRY(std::string name, expectName("a parameter name"));
    KILN_TRY_VOID(expect(":"));
    KILN_TRY(DType dtype, expectDType());
    KILN_TRY_VOID(expect("["));
    const Token &sizeToken = peek();
    KILN_TRY(int64_t size, expectInteger("a buffer size"));
    KILN_TRY_VOID(expect("]"));
    if (size < 0)
      return errorAt(sizeToken, fmt::format("parameter '{}' has a negative size", name));
    MemScope scope = MemScope::Global;
    if (peek().kind == TokenKind::Identifier) {
      auto named = std::ranges::find(kScopes, peek().spelling, memScopeName);
      if (named == std::end(kScopes))
        return expected("',', ')' or a memory scope");
      scope = *named;
      advance();
    }
    KILN_TRY(BufferPtr param, bindBuffer(nameToken, dtype, size, scope));
    kernel.params.push_back(std::move(param));
  }
  if (accept("min_blocks_per_sm")) {
    KILN_TRY_VOID(expect("="));
    const Token &countToken = peek();
    KILN_TRY(int64_t count, expectInteger("a block count"));
    if (count < 1 || count > 1024)
      return errorAt(countToken, fmt::format("min_blocks_per_sm is 1 to 1024, not {}", count));
    kernel.minBlocksPerSm = static_cast<int>(count);
  }
  KILN_TRY(kernel.body, parseBody());
  return kernel;
}

} // namespace kiln::kir::text

namespace kiln::kir {

Expected<std::vector<Kernel>> parseKernels(std::string_view text, std::string_view sourceName,
                                           unsigned firstLine) {
  std::string fileName(sourceName);
  KILN_TRY(std::vector<text::Token> tokens, text::tokenize(text, fileName, firstLine));
  text::KernelTextParser parser(std::move(tokens), fileName);
  std::vector<Kernel> kernels;
  do {
    KILN_TRY(Kernel kernel, parser.parseKernel());
    kernels.push_back(std::move(kernel));
  } while (!parser.atEnd());
  return kernels;
}

Expected<Kernel> parseKernel(std::string_view text, std::string_view sourceName,
                             unsigned firstLine) {
  KILN_TRY(std::vector<Kernel> kernels, parseKernels(text, sourceName, firstLine));
  if (kernels.size() != 1)
    return makeError(ErrorCode::ParseError,
                     fmt::format("expected one kernel, found {}", kernels.size()),
                     Location{std::string(sourceName), firstLine, 0});
  return std::move(kernels.front());
}

} // namespace kiln::kir
