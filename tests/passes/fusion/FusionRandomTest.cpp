// Fusion on random DAGs of elementwise, broadcast, movement, reduction,
// softmax and matmul ops with scalar constants, iotas, large constants and
// random outputs: every plan keeps the invariants (one group per node, closed
// groups, acyclic group graph, topological plan order) and is deterministic.
#include "FusionTestUtil.h"

#include "passes/PassManager.h"
#include "support/HostTensor.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

class RandomGraphBuilder {
public:
  RandomGraphBuilder(Graph &graph, uint64_t seed) : graph_(graph), rng_(seed) {}

  void build(int numNodes) {
    addLeaf(true, {3, 5});
    addLeaf(true, {5, 5});
    addLeaf(false, {1, 5});
    addLeaf(false, {5});
    while (static_cast<int>(graph_.numNodes()) < numNodes)
      if (Value *value = addRandomNode())
        pool_.push_back(value);
    // The last node is an output; so is any other node by chance.
    std::vector<Node *> order = graph_.topologicalOrder();
    int outputs = 0;
    for (size_t i = 0; i < order.size(); ++i)
      if (i + 1 == order.size() || pick(6) == 0)
        REQUIRE(graph_.addOutput("out" + std::to_string(outputs++), order[i]->result()));
    if (pick(4) == 0)
      REQUIRE(graph_.addOutput("leaf", graph_.inputs().front()));
  }

private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_.nextU64() % n); }
  Value *any() { return pool_[pick(pool_.size())]; }

  void addLeaf(bool input, Shape shape) {
    std::string name = "v" + std::to_string(pool_.size());
    TensorType type{DType::F32, std::move(shape)};
    pool_.push_back(input ? *graph_.addInput(name, type) : *graph_.addParam(name, type));
  }

  /// A value of rank 2 (most ops here want matrices).
  Value *anyMatrix() {
    for (int tries = 0; tries < 8; ++tries)
      if (Value *value = any(); value->type().rank() == 2)
        return value;
    return pool_.front();
  }

  /// nullptr when the op does not fit the operands drawn (shape inference says no).
  Value *add(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {}) {
    auto value = graph_.addNode(kind, std::move(operands), std::move(attrs));
    return value ? *value : nullptr;
  }

  Value *addRandomNode() {
    static constexpr OpKind kUnary[] = {OpKind::Exp, OpKind::Neg, OpKind::Relu, OpKind::Tanh,
                                        OpKind::Abs};
    static constexpr OpKind kBinary[] = {OpKind::Add, OpKind::Mul, OpKind::Sub, OpKind::Max};
    switch (pick(13)) {
    case 0:
    case 1: return add(kUnary[pick(std::size(kUnary))], {any()});
    case 2:
    case 3:
    case 4:
      // Broadcasting pairs often fail to combine; addNode rejects those.
      return add(kBinary[pick(std::size(kBinary))], {any(), any()});
    case 5: {
      Value *x = any();
      if (x->type().rank() == 0)
        return nullptr;
      int64_t axis = static_cast<int64_t>(pick(x->type().shape.size()));
      return add(pick(2) ? OpKind::ReduceSum : OpKind::ReduceMax, {x},
                 {{"axes", std::vector<int64_t>{axis}}, {"keepdims", pick(2) == 0}});
    }
    case 6: {
      Value *a = anyMatrix();
      if (a->type().rank() != 2)
        return nullptr;
      int64_t k = a->type().dim(1);
      for (int tries = 0; tries < 8; ++tries)
        if (Value *b = any(); b->type().rank() == 2 && b->type().dim(0) == k)
          return add(OpKind::MatMul, {a, b});
      std::string name = "w" + std::to_string(pool_.size());
      Value *w = *graph_.addParam(name, TensorType{DType::F32, {k, int64_t(1 + pick(6))}});
      return add(OpKind::MatMul, {a, w});
    }
    case 7: {
      Value *x = anyMatrix();
      return x->type().rank() == 2
                 ? add(OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0}}})
                 : nullptr;
    }
    case 8: {
      Value *x = any();
      int64_t n = x->type().numElements();
      return add(OpKind::Reshape, {x},
                 {{"shape", pick(2) ? std::vector<int64_t>{n} : std::vector<int64_t>{n, 1}}});
    }
    case 9: {
      Value *x = anyMatrix();
      if (x->type().rank() != 2)
        return nullptr;
      Shape target = x->type().shape;
      for (int64_t &dim : target)
        if (dim == 1)
          dim = 4;
      return add(OpKind::BroadcastTo, {x}, {{"shape", target}});
    }
    case 10: {
      Shape shape = pick(2) ? Shape{} : Shape{3, 5};
      if (pick(3) == 0)
        return add(OpKind::Iota, {},
                   {{"axis", int64_t{0}}, {"dtype", DType::F32}, {"shape", Shape{3, 5}}});
      return add(OpKind::Constant, {},
                 {{"dtype", DType::F32}, {"shape", shape}, {"value", std::vector<double>{0.5}}});
    }
    case 11: return add(OpKind::Softmax, {anyMatrix()});
    default: {
      Value *x = any();
      Value *condition = add(OpKind::Gt, {x, any()});
      return condition ? add(OpKind::Where, {condition, x, any()}) : nullptr;
    }
    }
  }

  Graph &graph_;
  Rng rng_;
  std::vector<Value *> pool_;
};

} // namespace

TEST_CASE("fusion plans of random graphs keep every invariant", "[passes][fusion][random]") {
  // Counts over all graphs, so the test fails if the generator stops
  // producing the structures the invariants are about.
  int epilogues = 0, prologues = 0, duplicated = 0, aliases = 0, constants = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    INFO("seed " << seed);
    Graph graph("random");
    RandomGraphBuilder(graph, seed).build(8 + static_cast<int>(seed % 40));
    FusionPlan plan = planOrFail(graph);
    checkPlanInvariants(graph, plan);
    CHECK(printFusionPlan(graph, plan) == printFusionPlan(graph, planOrFail(graph)));
    for (const FusionGroup &group : plan.groups) {
      if (group.anchor != nullptr && group.anchor != group.root)
        ++epilogues;
      if (group.anchor != nullptr && group.anchor != group.nodes.front() &&
          group.nodes.front()->numOperands() != 0)
        ++prologues;
      for (const ir::Node *node : group.nodes)
        duplicated += isDuplicable(*node) && node != group.root;
      aliases += group.kind == GroupKind::Alias;
      constants += group.kind == GroupKind::Constant;
    }
  }
  CHECK(epilogues > 50);
  CHECK(prologues > 50);
  CHECK(duplicated > 50);
  CHECK(aliases > 10);
  CHECK(constants > 10);
}

TEST_CASE("fusion plans of random graphs survive decomposition and cleanup",
          "[passes][fusion][random]") {
  for (uint64_t seed = 1000; seed < 1100; ++seed) {
    INFO("seed " << seed);
    Graph graph("random");
    RandomGraphBuilder(graph, seed).build(30);
    PassManager manager;
    REQUIRE(manager.addPipeline("decompose,fold,simplify,cse,dce"));
    auto changed = manager.run(graph);
    if (!changed)
      FAIL("pipeline failed: " << changed.error().str());
    checkPlanInvariants(graph, planOrFail(graph));
  }
}
