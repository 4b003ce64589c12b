// Two scalar stores to adjacent elements of a global buffer, i and i + 1 with i known even,
// written as one store of both. The tensor-core epilogues store each thread's accumulator
// pairs so (columns j and j + 1 of a row, under one edge guard); LLVM joins such stores
// itself, NVRTC's compiler does not, and without this every bf16 result of an NVRTC kernel
// was a 2-byte store. A global buffer's base is 16-byte aligned (the runtime's promise, which
// the NVPTX backend gives LLVM too), so an even index makes the pair's address aligned.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/Builder.h"
#include "ir/kernel/IRUtils.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::codegen::cuda {
namespace {

/// The store `stmt` ends in under its lets (nullptr when it ends otherwise), and those lets.
const kir::Store *storeUnderLets(const kir::Stmt &stmt, std::vector<const kir::Let *> &lets) {
  const kir::Stmt *at = &stmt;
  while (at->kind() == kir::StmtKind::Let) {
    const auto &let = static_cast<const kir::Let &>(*at);
    lets.push_back(&let);
    at = let.body.get();
  }
  return at->kind() == kir::StmtKind::Store ? static_cast<const kir::Store *>(at) : nullptr;
}

/// `expr` with the variables of `lets` (outermost first) replaced by their values: each store
/// of an epilogue binds its own copies of the tile's coordinates.
kir::ExprPtr inlineLets(kir::ExprPtr expr, const std::vector<const kir::Let *> &lets) {
  for (auto let = lets.rbegin(); let != lets.rend(); ++let)
    expr = kir::substitute(expr, (*let)->var.get(), (*let)->value);
  return expr;
}

/// The terms of a sum (through nested adds, in order) and the sum of its constant terms.
void sumTerms(const kir::ExprPtr &expr, std::vector<kir::ExprPtr> &terms, int64_t &constant) {
  if (expr->kind() == kir::ExprKind::Binary) {
    const auto &binary = static_cast<const kir::Binary &>(*expr);
    if (binary.op == kir::BinaryOp::Add) {
      sumTerms(binary.lhs, terms, constant);
      sumTerms(binary.rhs, terms, constant);
      return;
    }
  }
  if (std::optional<int64_t> value = kir::constIntValue(expr))
    constant += *value;
  else
    terms.push_back(expr);
}

/// Whether `index` is `base + 1`: the epilogues write column j + 1 of a row at the offset of
/// column j plus one, wherever in the sum the simplifier left the constant (row r + 8's
/// pair at + 8 N and + 8 N + 1).
bool isNextIndex(const kir::ExprPtr &index, const kir::ExprPtr &base) {
  std::vector<kir::ExprPtr> indexTerms, baseTerms;
  int64_t indexConstant = 0, baseConstant = 0;
  sumTerms(index, indexTerms, indexConstant);
  sumTerms(base, baseTerms, baseConstant);
  return indexConstant == baseConstant + 1 && indexTerms.size() == baseTerms.size() &&
         std::equal(indexTerms.begin(), indexTerms.end(), baseTerms.begin(),
                    [](const kir::ExprPtr &a, const kir::ExprPtr &b) { return kir::exprEqual(a, b); });
}

bool readsBuffer(const kir::ExprPtr &expr, const kir::Buffer *buffer) {
  std::vector<const kir::Load *> loads = kir::collectLoads(expr);
  return std::any_of(loads.begin(), loads.end(),
                     [&](const kir::Load *load) { return load->buffer.get() == buffer; });
}

} // namespace

Expected<bool> CudaEmitter::emitPairedStores(const kir::Stmt &first, const kir::Stmt &second) {
  std::vector<const kir::Let *> firstLets, secondLets;
  const kir::Store *low = storeUnderLets(first, firstLets);
  const kir::Store *high = storeUnderLets(second, secondLets);
  if (!low || !high || low->buffer != high->buffer || low->predicate || high->predicate)
    return false;
  const kir::Buffer &buffer = *low->buffer;
  const DType dtype = buffer.dtype;
  std::optional<std::string> pairType = vectorCType(dtype, 2);
  if (buffer.scope != kir::MemScope::Global || !pairType ||
      low->value->type() != kir::Type::scalar(dtype) ||
      high->value->type() != kir::Type::scalar(dtype))
    return false;
  const kir::ExprPtr lowIndex = inlineLets(low->index, firstLets);
  if (!isNextIndex(inlineLets(high->index, secondLets), lowIndex))
    return false;
  // The low store moves below the high one's lets: they must not read what it writes.
  for (const kir::Let *let : secondLets)
    if (readsBuffer(let->value, &buffer))
      return false;
  if (readsBuffer(high->value, &buffer) || readsBuffer(high->index, &buffer))
    return false;
  auto letValue = [&](const kir::Var &var) -> kir::ExprPtr {
    auto found = letValues_.find(&var);
    return found == letValues_.end() ? nullptr : found->second;
  };
  if (kir::knownTrailingZeros(lowIndex, letValue) < 1)
    return false;
  auto name = bufferNames_.find(&buffer);
  if (name == bufferNames_.end())
    return false; // emitStore reports it
  for (const auto *lets : {&firstLets, &secondLets})
    for (const kir::Let *let : *lets)
      KILN_TRY_VOID(bindLet(*let));
  KILN_TRY(CCode index, emitScalar(low->index));
  KILN_TRY(std::vector<CCode> lowValue, emitLanes(low->value));
  KILN_TRY(std::vector<CCode> highValue, emitLanes(high->value));
  line(fmt::format("kiln_store<{}>(&{}[{}], {});", *pairType, name->second, index.text,
                   vectorValue({lowValue[0], highValue[0]}, dtype)));
  return true;
}

} // namespace kiln::codegen::cuda
