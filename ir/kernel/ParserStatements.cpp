// Parsing kernel IR statements and kernels, and the entry points of ir/kernel/Parser.h
// (the GPU statements are in ParserGpuStatements.cpp).
#include "ir/kernel/Parser.h"
#include "ir/kernel/ParserCore.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::kir::text {

namespace {

constexpr ForKind kForKinds[] = {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized,
                                 ForKind::Parallel, ForKind::BlockX,  ForKind::BlockY,
                                 ForKind::BlockZ,   ForKind::ThreadX, ForKind::ThreadY,
                                 ForKind::ThreadZ};
constexpr MemScope kScopes[] = {MemScope::Global, MemScope::Local, MemScope::Shared,
                                MemScope::Register};

/// A let or alloc without braces of its own, waiting for the rest of its statement list.
struct OpenScope {
  std::vector<StmtPtr> before; ///< the statements of the list before it
  VarPtr var;                  ///< a let's variable, or
  BufferPtr buffer;            ///< an alloc's buffer
  ExprPtr value;               ///< a let's value
};

/// A body as the builders make one (kir::seq): a lone statement as itself, so passes see
/// the same trees as for built kernels. A lone nested block stays wrapped: alone, it would
/// print without its braces.
StmtPtr makeBody(std::vector<StmtPtr> stmts) {
  if (stmts.size() == 1 && stmts.front()->kind() != StmtKind::Block)
    return std::move(stmts.front());
  return std::make_shared<Block>(std::move(stmts));
}

} // namespace

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
  if (std::optional<TargetOp> op = targetOpNamed(word))
    return parseTargetInstr(*op);
  advance();
  if (word == "eval") {
    KILN_TRY(ExprPtr value, parseExpr());
    return std::make_shared<Evaluate>(std::move(value));
  }
  if (word == "barrier")
    return std::make_shared<Barrier>();
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
