// kiln::Graph: building, error recording, name scopes and parameter values.
#include "frontend/Graph.h"

#include <algorithm>

#include "frontend/io/TorchStateDict.h"

#include "ir/graph/Verifier.h"

#include <atomic>
#include <fmt/format.h>

namespace kiln {

namespace {

// FNV-1a over the name, then SplitMix64's finalizer over (seed, hash): well
// mixed, platform independent, and cheap.
uint64_t mixSeed(uint64_t seed, std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (hash | 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t nextGraphId() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

} // namespace

Graph::Graph(std::string name, uint64_t seed)
    : ir_(std::make_unique<ir::Graph>(std::move(name))), id_(nextGraphId()), seed_(seed) {}

Graph::~Graph() = default;

Tensor Graph::fail(Error error, const std::source_location &loc) {
  ++errorCount_;
  if (!firstError_) {
    if (!error.location() || !error.location()->known())
      firstError_ = std::move(error).at(Location::fromSource(loc));
    else
      firstError_ = std::move(error);
  }
  return Tensor(this, nullptr);
}

Tensor Graph::input(std::string name, ShapeSpec shape, DType dtype, std::source_location loc) {
  std::vector<ir::SizeExpr> sizes;
  for (const Dim &dim : shape.dims()) {
    if (!dim.isSymbol()) {
      sizes.push_back(ir::SizeExpr(dim.size()));
      continue;
    }
    const ir::SizeSymbol &symbol = dim.symbol();
    const ir::SizeSymbol *declared = ir_->findSymbol(symbol.name);
    if (!declared) {
      auto added = ir_->declareSymbol(symbol);
      if (!added)
        return fail(Error(added.error().code(),
                          fmt::format("input '{}': {}", name, added.error().message())),
                    loc);
    } else if (*declared != symbol) {
      return fail(Error(ErrorCode::InvalidArgument,
                        fmt::format("input '{}': size symbol {} is declared twice: {} and {}",
                                    name, symbol.name, declared->str(), symbol.str())),
                  loc);
    }
    sizes.push_back(ir::SizeExpr::symbol(symbol));
  }
  // A negative static size is refused by addInput, naming the input.
  ir::TensorType type{dtype, {}};
  for (const ir::SizeExpr &size : sizes)
    type.shape.push_back(size.upperBound());
  if (std::any_of(sizes.begin(), sizes.end(), [](const ir::SizeExpr &s) { return !s.isConstant(); }))
    type.symbolicDims = std::move(sizes);
  auto value = ir_->addInput(name, std::move(type));
  if (!value)
    return fail(std::move(value).error(), loc);
  return Tensor(this, *value);
}

Tensor Graph::param(std::string name, HostTensor initialValue, bool trainable,
                    std::source_location loc) {
  std::string fullName = scopedName(name);
  auto value = ir_->addParam(fullName, ir::TensorType{initialValue.dtype(), initialValue.shape()});
  if (!value)
    return fail(std::move(value).error(), loc);
  paramValues_.emplace(fullName, std::move(initialValue));
  paramOrder_.push_back(fullName);
  if (!trainable)
    frozen_.insert(fullName);
  return Tensor(this, *value);
}

void Graph::output(std::string name, Tensor value, std::source_location loc) {
  if (value.poisoned() && value.graph() == this)
    return; // The error that poisoned it is already recorded.
  if (value.empty()) {
    fail(Error(ErrorCode::InvalidArgument,
               fmt::format("output '{}': the Tensor is empty (default-constructed)", name)),
         loc);
    return;
  }
  if (value.graph() != this) {
    fail(Error(ErrorCode::InvalidArgument,
               fmt::format("output '{}': the Tensor belongs to graph '{}', not '{}'", name,
                           value.graph()->name(), this->name())),
         loc);
    return;
  }
  if (auto added = ir_->addOutput(std::move(name), value.value()); !added)
    fail(std::move(added).error(), loc);
}

Tensor Graph::apply(ir::OpKind kind, const std::vector<Tensor> &operands, ir::AttrMap attrs,
                    const std::source_location &loc) {
  std::vector<ir::Value *> values;
  values.reserve(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor &operand = operands[i];
    if (operand.empty())
      return fail(Error(ErrorCode::InvalidArgument,
                        fmt::format("{}: operand {} is an empty (default-constructed) Tensor",
                                    ir::opName(kind), i)),
                  loc);
    if (operand.graph() != this)
      return fail(Error(ErrorCode::InvalidArgument,
                        fmt::format("{}: operand {} belongs to graph '{}', not '{}'",
                                    ir::opName(kind), i, operand.graph()->name(), name())),
                  loc);
    if (operand.poisoned())
      return Tensor(this, nullptr);
    values.push_back(operand.value());
  }
  auto result = ir_->addNode(kind, std::move(values), std::move(attrs), Location::fromSource(loc));
  if (!result)
    return fail(std::move(result).error(), loc);
  return Tensor(this, *result);
}

Graph::NameScope Graph::nameScope(std::string name) {
  scopes_.push_back(std::move(name));
  return NameScope(this);
}

Graph::NameScope::~NameScope() { graph_->scopes_.pop_back(); }

std::string Graph::scopedName(std::string_view name) const {
  std::string out;
  for (const std::string &scope : scopes_)
    out += scope + ".";
  out += name;
  return out;
}

bool Graph::reserveName(std::string_view name) {
  return usedNames_.insert(scopedName(name)).second;
}

std::string Graph::uniqueName(std::string_view base) {
  std::string candidate(base);
  for (int suffix = 1; usedNames_.contains(scopedName(candidate)); ++suffix)
    candidate = fmt::format("{}_{}", base, suffix);
  usedNames_.insert(scopedName(candidate));
  return candidate;
}

Rng Graph::paramRng(std::string_view fullName) const { return Rng(mixSeed(seed_, fullName)); }

bool Graph::isTrainable(std::string_view fullName) const {
  return paramValues_.contains(fullName) && !frozen_.contains(fullName);
}

std::vector<std::string> Graph::trainableParamNames() const {
  std::vector<std::string> out;
  for (const std::string &name : paramOrder_)
    if (!frozen_.contains(name))
      out.push_back(name);
  return out;
}

std::vector<std::string> Graph::frozenParamNames() const {
  std::vector<std::string> out;
  for (const std::string &name : paramOrder_)
    if (frozen_.contains(name))
      out.push_back(name);
  return out;
}

Expected<void> Graph::setParamValue(std::string_view fullName, HostTensor value) {
  auto it = paramValues_.find(fullName);
  if (it == paramValues_.end())
    return makeError(ErrorCode::NotFound,
                     fmt::format("graph '{}' has no parameter '{}'", name(), fullName));
  if (value.dtype() != it->second.dtype() || value.shape() != it->second.shape())
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("parameter '{}' is {}, the new value is {}", fullName,
                                 it->second.typeStr(), value.typeStr()));
  it->second = std::move(value);
  return {};
}

Expected<void> Graph::loadParamValues(const NamedTensors &values, bool requireAll) {
  for (const auto &[paramName, value] : values)
    if (!paramValues_.contains(paramName))
      return makeError(ErrorCode::NotFound,
                       fmt::format("graph '{}' has no parameter '{}'", name(), paramName));
  if (requireAll)
    for (const std::string &paramName : paramOrder_)
      if (!values.contains(paramName))
        return makeError(
            ErrorCode::NotFound,
            fmt::format("no value given for parameter '{}' of graph '{}'", paramName, name()));
  // Check everything before changing anything, so a failed load leaves the
  // graph as it was.
  for (const auto &[paramName, value] : values) {
    const HostTensor &current = paramValues_.find(paramName)->second;
    if (value.dtype() != current.dtype() || value.shape() != current.shape())
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("parameter '{}' is {}, the new value is {}", paramName,
                                   current.typeStr(), value.typeStr()));
  }
  for (const auto &[paramName, value] : values)
    paramValues_.find(paramName)->second = value;
  return {};
}

Expected<void> Graph::loadTorchStateDict(const std::string &safetensorsPath) {
  KILN_TRY(io::TensorMap stateDict, io::loadSafetensors(safetensorsPath));
  auto values = io::mapTorchStateDict(*this, stateDict);
  if (!values)
    return std::unexpected(
        Error(values.error()).withNote(fmt::format("state dict: {}", safetensorsPath)));
  return loadParamValues(*values, /*requireAll=*/true);
}

Expected<void> Graph::finalize() const {
  if (firstError_) {
    Error error = *firstError_;
    if (errorCount_ > 1)
      error.withNote(fmt::format("{} later DSL call{} also failed; fix this one first",
                                 errorCount_ - 1, errorCount_ == 2 ? "" : "s"));
    return std::unexpected(std::move(error));
  }
  if (ir_->outputs().empty())
    return makeError(
        ErrorCode::InvalidArgument,
        fmt::format("graph '{}' has no outputs: call Graph::output(name, tensor)", name()));
  return ir::verifyGraph(*ir_);
}

} // namespace kiln
