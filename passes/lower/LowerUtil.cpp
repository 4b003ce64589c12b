// Shared lowering helpers: signatures, index arithmetic, compute types and the
// hoisting of shared subexpressions into Lets.
#include "passes/lower/LowerUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln::lower {

using namespace kiln::kir;

KernelSignature makeSignature(const passes::FusionGroup &group) {
  KernelSignature signature;
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    const ir::Value *input = group.inputs[i];
    BufferPtr buffer = makeBuffer(fmt::format("in{}", i), input->type().dtype,
                                  input->type().numElements());
    signature.buffers[input] = buffer;
    signature.params.push_back(buffer);
  }
  const ir::Value *result = group.root->result();
  signature.out = makeBuffer("out", result->type().dtype, result->type().numElements());
  signature.buffers[result] = signature.out;
  signature.params.push_back(signature.out);
  return signature;
}

std::string kernelName(const passes::FusionGroup &group) {
  return fmt::format("k{}_{}_{}", group.id, passes::groupKindName(group.kind), group.root->name());
}

LoweredKernel finishKernel(const passes::FusionGroup &group, const KernelSignature &signature,
                           StmtPtr body) {
  LoweredKernel lowered;
  lowered.kernel.name = kernelName(group);
  lowered.kernel.params = signature.params;
  lowered.kernel.body = std::move(body);
  lowered.numInputs = static_cast<int>(group.inputs.size());
  lowered.numWorkspaces = 0;
  return lowered;
}

Error unsupportedNode(const ir::Node &node, std::string_view why) {
  std::optional<Location> where;
  if (node.location().known())
    where = node.location();
  return Error(ErrorCode::Unsupported,
               fmt::format("lowering: {} ({}): {}", node.name(), node.type().str(), why), where);
}

// ---- dtypes

bool isNarrowFloat(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F8E4M3 ||
         dtype == DType::F8E5M2;
}

Type computeType(DType dtype) { return Type::scalar(isNarrowFloat(dtype) ? DType::F32 : dtype); }

ExprPtr toCompute(ExprPtr value) {
  Type type = value->type();
  if (!isNarrowFloat(type.dtype))
    return value;
  // A constant rounded to the narrow dtype (dtypeConstant) is its own f32 value.
  if (auto narrowed = as<Cast>(*value))
    if (auto imm = as<FloatImm>(*narrowed->value);
        imm && imm->type() == Type{DType::F32, type.lanes} &&
        roundToDType(imm->value, type.dtype) == imm->value)
      return narrowed->value;
  return cast(std::move(value), Type{DType::F32, type.lanes});
}

ExprPtr fromCompute(ExprPtr value, DType dtype) {
  Type type{dtype, value->type().lanes};
  return cast(std::move(value), type);
}

Type sumType(DType dtype) {
  return isFloatingPoint(dtype) ? Type::scalar(DType::F64) : Type::scalar(dtype);
}

ExprPtr dtypeConstant(double value, DType dtype) {
  double rounded = roundToDType(value, dtype);
  if (isNarrowFloat(dtype))
    return cast(floatImm(rounded, Type::scalar(DType::F32)), Type::scalar(dtype));
  return constant(rounded, Type::scalar(dtype));
}

// ---- index arithmetic

std::vector<int64_t> stridesOf(const ir::Shape &shape) { return ir::rowMajorStrides(shape); }

ExprPtr linearIndex(std::span<const ExprPtr> index, const ir::Shape &shape) {
  KILN_CHECK(index.size() == shape.size(), "linearIndex: rank mismatch");
  std::vector<int64_t> strides = stridesOf(shape);
  ExprPtr flat = kir::index(0);
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1)
      continue; // its index is 0
    flat = add(flat, mul(index[k], kir::index(strides[k])));
  }
  return flat;
}

std::vector<ExprPtr> delinearize(ExprPtr flat, const std::vector<int64_t> &extents) {
  std::vector<ExprPtr> out(extents.size(), kir::index(0));
  int nonUnit = 0;
  for (int64_t e : extents)
    nonUnit += e != 1 ? 1 : 0;
  if (nonUnit <= 1) {
    for (size_t k = 0; k < extents.size(); ++k)
      if (extents[k] != 1)
        out[k] = flat;
    return out;
  }
  int64_t stride = 1;
  int seen = 0;
  for (size_t k = extents.size(); k-- > 0;) {
    if (extents[k] == 1)
      continue;
    ++seen;
    ExprPtr q = stride == 1 ? flat : div(flat, kir::index(stride));
    // The outermost non-unit axis needs no modulo: the flat index is in range.
    out[k] = seen == nonUnit ? q : mod(q, kir::index(extents[k]));
    stride *= extents[k];
  }
  return out;
}

ExprPtr clampIndex(ExprPtr value, int64_t low, int64_t high) {
  return min(max(std::move(value), kir::index(low)), kir::index(high));
}

int64_t product(std::span<const int64_t> extents) {
  int64_t p = 1;
  for (int64_t e : extents)
    p *= e;
  return p;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool runsInParallel(int64_t totalWork, int64_t minParallelWork) {
  return totalWork >= minParallelWork;
}

// ---- statements

std::string VarNames::name(const std::string &prefix) {
  return fmt::format("{}{}", prefix, next_[prefix]++);
}

VarPtr VarNames::fresh(const std::string &prefix, Type type) { return makeVar(name(prefix), type); }

namespace {

bool isTrivial(const Expr &e) {
  switch (e.kind()) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
  case ExprKind::VarRef: return true;
  case ExprKind::Broadcast: return isTrivial(*as<Broadcast>(e)->value);
  default: return false;
  }
}

std::vector<ExprPtr> childrenOf(const Expr &e) {
  switch (e.kind()) {
  case ExprKind::Unary: return {as<Unary>(e)->operand};
  case ExprKind::Binary: return {as<Binary>(e)->lhs, as<Binary>(e)->rhs};
  case ExprKind::Select: {
    auto s = as<Select>(e);
    return {s->cond, s->onTrue, s->onFalse};
  }
  case ExprKind::Cast: return {as<Cast>(e)->value};
  case ExprKind::Load: {
    auto l = as<Load>(e);
    if (l->predicate)
      return {l->index, l->predicate};
    return {l->index};
  }
  case ExprKind::Call: return as<Call>(e)->args;
  case ExprKind::Broadcast: return {as<Broadcast>(e)->value};
  case ExprKind::Shuffle: return {as<Shuffle>(e)->value, as<Shuffle>(e)->lane};
  default: return {};
  }
}

ExprPtr withChildren(const ExprPtr &e, const std::vector<ExprPtr> &c) {
  switch (e->kind()) {
  case ExprKind::Unary: return std::make_shared<Unary>(as<Unary>(*e)->op, c[0]);
  case ExprKind::Binary: return std::make_shared<Binary>(as<Binary>(*e)->op, c[0], c[1], e->type());
  case ExprKind::Select: return std::make_shared<Select>(c[0], c[1], c[2]);
  case ExprKind::Cast: return std::make_shared<Cast>(c[0], e->type());
  case ExprKind::Load: {
    auto l = as<Load>(*e);
    return std::make_shared<Load>(l->buffer, c[0], e->type().lanes, c.size() > 1 ? c[1] : nullptr);
  }
  case ExprKind::Call: return std::make_shared<Call>(as<Call>(*e)->fn, c, e->type());
  case ExprKind::Broadcast: return std::make_shared<Broadcast>(c[0], e->type().lanes);
  case ExprKind::Shuffle: return std::make_shared<Shuffle>(as<Shuffle>(*e)->mode, c[0], c[1]);
  default: return e;
  }
}

/// Narrow floats exist only in memory and in casts, so they are never bound.
bool bindable(const Expr &e) { return !isTrivial(e) && !isNarrowFloat(e.type().dtype); }

class Hoister {
public:
  explicit Hoister(VarNames &names) : names_(names) {}

  void count(const ExprPtr &e) {
    if (uses_[e.get()]++ > 0)
      return;
    for (const ExprPtr &child : childrenOf(*e))
      count(child);
  }

  ExprPtr rewrite(const ExprPtr &e) {
    if (auto it = done_.find(e.get()); it != done_.end())
      return it->second;
    std::vector<ExprPtr> children = childrenOf(*e);
    bool changed = false;
    for (ExprPtr &child : children) {
      ExprPtr rewritten = rewrite(child);
      changed = changed || rewritten != child;
      child = std::move(rewritten);
    }
    ExprPtr result = changed ? withChildren(e, children) : e;
    if (uses_[e.get()] > 1 && bindable(*e)) {
      VarPtr var = names_.fresh("t", result->type());
      lets_.emplace_back(var, result);
      result = kir::ref(var);
    }
    done_.emplace(e.get(), result);
    return result;
  }

  std::vector<std::pair<VarPtr, ExprPtr>> takeLets() { return std::move(lets_); }

private:
  VarNames &names_;
  std::unordered_map<const Expr *, int> uses_;
  std::unordered_map<const Expr *, ExprPtr> done_;
  std::vector<std::pair<VarPtr, ExprPtr>> lets_;
};

} // namespace

SharedValues hoistShared(std::vector<ExprPtr> roots, VarNames &names) {
  Hoister hoister(names);
  for (const ExprPtr &root : roots)
    hoister.count(root);
  SharedValues shared;
  for (const ExprPtr &root : roots)
    shared.roots.push_back(hoister.rewrite(root));
  shared.lets = hoister.takeLets();
  return shared;
}

StmtPtr wrapLets(const std::vector<std::pair<VarPtr, ExprPtr>> &lets, StmtPtr body) {
  for (size_t i = lets.size(); i-- > 0;)
    body = let(lets[i].first, lets[i].second, std::move(body));
  return body;
}

StmtPtr storesBound(std::vector<StoreSpec> stores, VarNames &names) {
  std::vector<ExprPtr> roots;
  for (const StoreSpec &s : stores) {
    roots.push_back(s.index);
    roots.push_back(s.value);
  }
  SharedValues shared = hoistShared(std::move(roots), names);
  std::vector<StmtPtr> body;
  for (size_t i = 0; i < stores.size(); ++i)
    body.push_back(store(stores[i].buffer, shared.roots[2 * i], shared.roots[2 * i + 1]));
  return wrapLets(shared.lets, seq(std::move(body)));
}

StmtPtr storeBound(BufferPtr buffer, ExprPtr index, ExprPtr value, VarNames &names) {
  return storesBound({StoreSpec{std::move(buffer), std::move(index), std::move(value)}}, names);
}

Expected<StmtPtr>
letsBound(const std::string &prefix, std::vector<ExprPtr> values, VarNames &names,
          const std::function<Expected<StmtPtr>(std::vector<ExprPtr>)> &body) {
  SharedValues shared = hoistShared(std::move(values), names);
  std::vector<std::pair<VarPtr, ExprPtr>> lets = std::move(shared.lets);
  std::vector<ExprPtr> refs;
  for (ExprPtr &value : shared.roots) {
    if (isTrivial(*value) || isNarrowFloat(value->type().dtype)) {
      refs.push_back(value);
      continue;
    }
    VarPtr var = names.fresh(prefix, value->type());
    lets.emplace_back(var, value);
    refs.push_back(kir::ref(var));
  }
  KILN_TRY(StmtPtr inner, body(std::move(refs)));
  return wrapLets(lets, std::move(inner));
}

State combineTree(std::vector<State> parts,
                  const std::function<State(const State &, const State &)> &combine) {
  KILN_CHECK(!parts.empty(), "combineTree of nothing");
  while (parts.size() > 1) {
    std::vector<State> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2)
      next.push_back(combine(parts[i], parts[i + 1]));
    if (parts.size() % 2 == 1)
      next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.front();
}

namespace {

bool dependsOnParametersOnly(const ir::Value *value,
                             std::unordered_map<const ir::Value *, bool> &known) {
  if (value->kind() == ir::Value::Kind::Param)
    return true;
  const ir::Node *node = value->definingNode();
  if (!node || node->info().category == ir::OpCategory::Collective)
    return false;
  if (auto it = known.find(value); it != known.end())
    return it->second;
  bool result = std::ranges::all_of(node->operands(), [&](const ir::Value *operand) {
    return dependsOnParametersOnly(operand, known);
  });
  known.emplace(value, result);
  return result;
}

} // namespace

bool dependsOnParametersOnly(const ir::Value *value) {
  std::unordered_map<const ir::Value *, bool> known; // shared operands are walked once
  return dependsOnParametersOnly(value, known);
}

} // namespace kiln::lower
