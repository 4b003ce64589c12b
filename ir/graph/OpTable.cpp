// The op table expanded from Ops.def, lookups by kind and name, and the
// schema check of attributes shared by the builder, the parser and the verifier.
#include "ir/graph/OpTable.h"

#include "ir/graph/Decompositions.h"
#include "ir/graph/Gradients.h"
#include "ir/graph/Reference.h"
#include "ir/graph/ShapeInference.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::ir {

namespace {

// Attribute helpers used by the defaults in Ops.def.
Attr i64(int64_t value) { return Attr(value); }
Attr f64(double value) { return Attr(value); }
Attr flag(bool value) { return Attr(value); }
Attr str(const char *value) { return Attr(std::string(value)); }
Attr ints(std::initializer_list<int64_t> values) { return Attr(std::vector<int64_t>(values)); }
[[maybe_unused]] Attr floats(std::initializer_list<double> values) {
  return Attr(std::vector<double>(values));
}
Attr type(DType value) { return Attr(value); }

#define REQ(name, Kind, doc) AttrSpec{name, AttrKind::Kind, std::nullopt, doc}
#define OPT(name, Kind, value, doc) AttrSpec{name, AttrKind::Kind, value, doc}
#define ABSENT_OK(name, Kind, doc) AttrSpec{name, AttrKind::Kind, std::nullopt, doc, true}

std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> table;
#define KILN_OP(Enum, Name, Category, MinOps, MaxOps, Infer, Ref, Decompose, Gradient, Doc, ...) \
  table.push_back(OpInfo{OpKind::Enum, Name, OpCategory::Category, MinOps, MaxOps,               \
                         std::vector<AttrSpec>{__VA_ARGS__}, Infer, Ref, Decompose, Gradient,    \
                         Doc});
#include "ir/graph/Ops.def"
#undef KILN_OP
  for (size_t i = 0; i < table.size(); ++i) {
    KILN_CHECK(static_cast<size_t>(table[i].kind) == i, "op table out of enum order");
    // Only a composite elementwise op may leave its reference to its decomposition.
    KILN_CHECK(table[i].reference != nullptr || isCompositeElementwise(table[i]),
               fmt::format("op table: {} has no reference and is not a composite elementwise op",
                           table[i].name));
  }
  return table;
}

#undef REQ
#undef OPT
#undef ABSENT_OK

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> instance = buildTable();
  return instance;
}

bool isKind(const Attr &value, AttrKind kind) { return attrKind(value) == kind; }

} // namespace

std::string_view opCategoryName(OpCategory category) {
  switch (category) {
  case OpCategory::Elementwise: return "elementwise";
  case OpCategory::Reduction: return "reduction";
  case OpCategory::Contraction: return "contraction";
  case OpCategory::DataMovement: return "data movement";
  case OpCategory::Collective: return "collective";
  }
  return "?";
}

const OpInfo &opInfo(OpKind kind) { return table().at(static_cast<size_t>(kind)); }

std::span<const OpInfo> allOps() { return table(); }

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (const OpInfo &info : table())
    if (info.name == name)
      return info.kind;
  return std::nullopt;
}

Expected<AttrMap> normalizeAttrs(OpKind kind, AttrMap attrs) {
  const OpInfo &info = opInfo(kind);
  for (const auto &[name, value] : attrs) {
    auto spec = std::find_if(info.attrs.begin(), info.attrs.end(),
                             [&](const AttrSpec &s) { return name == s.name; });
    if (spec == info.attrs.end()) {
      std::string known;
      for (const AttrSpec &s : info.attrs)
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{}: unknown attribute '{}' (known: {})", info.name, name,
                                   known.empty() ? "none" : known));
    }
    // An int written where a float is expected is accepted and converted.
    if (spec->kind == AttrKind::Float && isKind(value, AttrKind::Int)) {
      attrs[name] = static_cast<double>(std::get<int64_t>(value));
      continue;
    }
    if (spec->kind == AttrKind::Floats && isKind(value, AttrKind::Ints)) {
      const auto &asInts = std::get<std::vector<int64_t>>(value);
      attrs[name] = std::vector<double>(asInts.begin(), asInts.end());
      continue;
    }
    if (!isKind(value, spec->kind))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{}: attribute '{}' expects {}, got {}", info.name, name,
                                   attrKindName(spec->kind), attrKindName(attrKind(value))));
  }
  for (const AttrSpec &spec : info.attrs) {
    if (attrs.contains(spec.name))
      continue;
    if (spec.mayBeAbsent)
      continue;
    if (!spec.defaultValue)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{}: missing required attribute '{}' ({})", info.name,
                                   spec.name, spec.doc));
    attrs.emplace(spec.name, *spec.defaultValue);
  }
  return attrs;
}

bool inferenceTakesSymbolicSizes(OpKind kind) {
  switch (kind) {
  // Part 2 of docs/dynamic-shapes.md (slice takes a symbolic axis whole, gather reads along
  // a static one).
  case OpKind::TakeAlongAxis: return false;
  default: return true;
  }
}

Expected<TensorType> inferResultType(OpKind kind, std::span<const TensorType> operands,
                                     AttrMap &attrs) {
  const OpInfo &info = opInfo(kind);
  int count = static_cast<int>(operands.size());
  if (count < info.minOperands || (info.maxOperands >= 0 && count > info.maxOperands)) {
    std::string expected = info.minOperands == info.maxOperands
                               ? std::to_string(info.minOperands)
                           : info.maxOperands < 0
                               ? "at least " + std::to_string(info.minOperands)
                               : fmt::format("{} to {}", info.minOperands, info.maxOperands);
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: expects {} operand{}, got {}", info.name, expected,
                                 info.maxOperands == 1 || (info.minOperands == 1 && info.maxOperands < 0) ? "" : "s",
                                 count));
  }
  KILN_TRY(attrs, normalizeAttrs(kind, std::move(attrs)));
  for (size_t i = 0; i < operands.size(); ++i)
    if (operands[i].isSymbolic() && !inferenceTakesSymbolicSizes(kind))
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("{}: symbolic sizes are not supported by this op yet "
                                   "(operand {} is {}); specialize the graph first "
                                   "(docs/dynamic-shapes.md)",
                                   info.name, i, operands[i].str()));
  KILN_TRY(TensorType result, info.infer(InferContext{kind, operands, attrs}));
  if (result.isSymbolic()) {
    KILN_CHECK(result.symbolicDims.size() == result.shape.size(),
               fmt::format("{} inferred {} symbolic sizes for rank {}", info.name,
                           result.symbolicDims.size(), result.shape.size()));
    for (size_t i = 0; i < result.shape.size(); ++i)
      KILN_CHECK(result.shape[i] == result.symbolicDims[i].upperBound(),
                 fmt::format("{} inferred {} with shape {} (not the upper bounds)", info.name,
                             result.str(), shapeStr(result.shape)));
  }
  // One check here keeps every consumer (interpreter, codegen) free of
  // overflow in element counts and flat indices.
  if (!checkedNumElements(result.shape))
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("{}: result shape {} has more than 2^53 elements (zero-size dims aside)", info.name,
                                 shapeStr(result.shape)));
  return result;
}

} // namespace kiln::ir
