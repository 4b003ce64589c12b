// "cse": merges nodes that compute the same value: same op, same operands (the
// same Value objects, in order), identical attributes and the same type.
//
// Why: the DSL, decompositions and autodiff build the same subexpression more
// than once (two softmaxes over one tensor, repeated constants, the same
// transpose of a weight); computing it once saves a kernel and its memory.
// Every op is pure, so merging is always sound. The earliest node in
// topological order survives, so the result is deterministic.
#include "passes/graph/GraphPasses.h"

#include "passes/graph/ReplaceNodes.h"

#include <bit>
#include <unordered_map>

namespace kiln::passes {

namespace {

// Doubles compare by bit pattern: 0.0 and -0.0 are different constants, and a
// NaN attribute equals itself.
bool sameDouble(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool sameAttr(const ir::Attr &a, const ir::Attr &b) {
  if (a.index() != b.index())
    return false;
  if (const auto *x = std::get_if<double>(&a))
    return sameDouble(*x, std::get<double>(b));
  if (const auto *xs = std::get_if<std::vector<double>>(&a)) {
    const auto &ys = std::get<std::vector<double>>(b);
    return xs->size() == ys.size() &&
           std::equal(xs->begin(), xs->end(), ys.begin(), sameDouble);
  }
  return a == b;
}

bool sameAttrs(const ir::AttrMap &a, const ir::AttrMap &b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const auto &x, const auto &y) {
           return x.first == y.first && sameAttr(x.second, y.second);
         });
}

bool sameComputation(const ir::Node &a, const ir::Node &b) {
  return a.kind() == b.kind() && a.operands() == b.operands() && a.type() == b.type() &&
         sameAttrs(a.attrs(), b.attrs());
}

size_t mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// Hashes what sameComputation compares, except attribute values (equal
// attributes with different hashes would break the table; a coarse hash only
// costs a few extra comparisons).
size_t hashComputation(const ir::Node &node) {
  size_t seed = std::hash<int>{}(static_cast<int>(node.kind()));
  for (const ir::Value *operand : node.operands())
    seed = mix(seed, std::hash<const void *>{}(operand));
  for (int64_t size : node.type().shape)
    seed = mix(seed, std::hash<int64_t>{}(size));
  seed = mix(seed, static_cast<size_t>(node.type().dtype));
  return mix(seed, node.attrs().size());
}

class CommonSubexpressionElimination final : public Pass {
public:
  std::string_view name() const override { return "cse"; }
  std::string_view description() const override {
    return "merges nodes with the same op, operands, attributes and type";
  }

  Expected<bool> run(ir::Graph &graph) override {
    // Lookups only, never iteration, so the unordered map keeps the pass
    // deterministic. Walking in topological order means that once a node is
    // merged, its users see the survivor as their operand and merge too.
    std::unordered_map<size_t, std::vector<ir::Node *>> seen;
    return replaceNodes(graph, name(), [&](ir::Node &node) -> Expected<ir::Value *> {
      std::vector<ir::Node *> &bucket = seen[hashComputation(node)];
      for (ir::Node *candidate : bucket)
        if (sameComputation(*candidate, node))
          return candidate->result();
      bucket.push_back(&node);
      return nullptr;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

} // namespace kiln::passes
