// Canonical text for a fusion group and a target (docs/tuning.md). Value
// names never appear: values are numbered by first use, so the same
// computation anywhere in any model gets the same signature.
#include "compiler/tuning/TuningKeys.h"

#include "ir/graph/Attribute.h"
#include "runtime/cache/ContentHash.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace kiln::tuning {

namespace {

/// Attribute values longer than this (a baked-in tensor constant) are keyed
/// by their hash, so a signature stays one readable screen.
constexpr size_t kMaxAttrText = 96;

std::string attrText(const ir::Attr &attr) {
  std::string text = ir::attrStr(attr);
  if (text.size() <= kMaxAttrText)
    return text;
  return "hash:" + runtime::hashBytes(text).hex();
}

/// Names values by first use: group inputs as in0, in1, ... (the kernel's
/// parameter order), the group's own nodes as n0, n1, ...
class ValueNumbering {
public:
  explicit ValueNumbering(const passes::FusionGroup &group) {
    for (size_t i = 0; i < group.inputs.size(); ++i)
      names_.emplace(group.inputs[i], fmt::format("in{}", i));
    for (size_t i = 0; i < group.nodes.size(); ++i)
      names_.emplace(group.nodes[i]->result(), fmt::format("n{}", i));
  }
  const std::string &name(const ir::Value *value) const { return names_.at(value); }

private:
  std::map<const ir::Value *, std::string> names_;
};

std::string nodeLine(const ir::Node &node, const ValueNumbering &numbering) {
  std::string line = fmt::format("{} {} = {}(", numbering.name(node.result()),
                                 dtypeName(node.type().dtype), node.name());
  for (size_t i = 0; i < node.numOperands(); ++i)
    line += (i ? ", " : "") + numbering.name(node.operand(i));
  line += ")";
  if (!node.attrs().empty()) {
    line += " {";
    bool first = true;
    for (const auto &[name, attr] : node.attrs()) {
      line += fmt::format("{}{}={}", first ? "" : ", ", name, attrText(attr));
      first = false;
    }
    line += "}";
  }
  return line;
}

/// "8x12" (a scalar is "scalar"): shorter than shapeStr for a one-line summary.
std::string dimsText(const ir::Shape &shape) {
  return shape.empty() ? "scalar" : fmt::format("{}", fmt::join(shape, "x"));
}

} // namespace

namespace {

/// A value's shape in a key. A symbolic one adds its symbols' ranges, so that each size
/// bucket (docs/dynamic-shapes.md) has records of its own: a schedule is chosen at the
/// range's upper bound, and runs at every size in it.
std::string shapeKey(const ir::TensorType &type) {
  if (!type.isSymbolic())
    return ir::shapeStr(type.shape);
  std::vector<std::string> dims;
  std::map<std::string, ir::SizeSymbol> symbols;
  for (const ir::SizeExpr &size : type.symbolicDims) {
    dims.push_back(size.str());
    for (const ir::SizeSymbol &symbol : size.symbols())
      symbols.emplace(symbol.name, symbol);
  }
  std::vector<std::string> ranges;
  for (const auto &[name, symbol] : symbols)
    ranges.push_back(symbol.str());
  return fmt::format("[{}]({})", fmt::join(dims, ","), fmt::join(ranges, ", "));
}

} // namespace

GroupIdentity groupIdentity(const ir::Graph &graph, const passes::FusionGroup &group) {
  (void)graph;
  ValueNumbering numbering(group);
  GroupIdentity id;
  id.signature = fmt::format("group {}\n", passes::groupKindName(group.kind));
  for (size_t i = 0; i < group.inputs.size(); ++i)
    id.signature += fmt::format("in{} {}\n", i, dtypeName(group.inputs[i]->type().dtype));
  for (const ir::Node *node : group.nodes)
    id.signature += nodeLine(*node, numbering) + "\n";
  id.signature += "root " + numbering.name(group.root->result());

  std::vector<std::string> shapes;
  for (size_t i = 0; i < group.inputs.size(); ++i)
    shapes.push_back(fmt::format("in{}={}", i, shapeKey(group.inputs[i]->type())));
  for (size_t i = 0; i < group.nodes.size(); ++i)
    shapes.push_back(fmt::format("n{}={}", i, shapeKey(group.nodes[i]->type())));
  id.shapes = fmt::format("{}", fmt::join(shapes, " "));

  // "contraction matmul+add+relu 64x800,800x500,500 -> 64x500"
  std::vector<std::string_view> ops;
  for (const ir::Node *node : group.nodes)
    ops.push_back(node->name());
  std::vector<std::string> inputShapes;
  for (const ir::Value *input : group.inputs)
    inputShapes.push_back(dimsText(input->type().shape));
  id.summary = fmt::format("{} {} {} -> {}", passes::groupKindName(group.kind),
                           fmt::join(ops, "+"), fmt::join(inputShapes, ","),
                           dimsText(group.root->type().shape));
  return id;
}

std::string targetFingerprint(const codegen::CpuTarget &target) { return target.cacheKey(); }

std::string targetFingerprint(const codegen::GpuTarget &target,
                              const GpuToolchainVersions &versions) {
  return fmt::format("{};driver={};toolkit={};cudnn={}", target.cacheKey(), versions.driver,
                     versions.toolkit, versions.cudnn);
}

TuningKey tuningKey(const GroupIdentity &group, const std::string &targetFingerprint) {
  return TuningKey{group.signature, group.shapes, targetFingerprint, std::string(kilnVersion())};
}

} // namespace kiln::tuning
