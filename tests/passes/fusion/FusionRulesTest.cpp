// Fusion rules one at a time, each on a hand-written graph whose grouping was
// worked out by hand: anchors and kinds, the tree rule, one anchor per group,
// no contraction prologue, prologue and epilogue limits, duplicated scalars,
// constants, aliases, and the attention error.
#include "FusionTestUtil.h"

#include <fmt/format.h>

using namespace kiln;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

/// Plans `text`, checks the invariants and returns the listing's lines.
std::vector<std::string> fuse(std::string_view text) {
  auto graph = parseOrFail(text);
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  return listingLines(*graph, plan);
}

using Lines = std::vector<std::string>;

} // namespace

TEST_CASE("fusion: elementwise ops and broadcasts form one pointwise group", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %b: f32[8]
  %0: f32[4,8] = exp(%x)
  %1: f32[1,8] = reshape(%b) {shape = [1, 8]}
  %2: f32[4,8] = broadcast_to(%1) {shape = [4, 8]}
  %3: f32[4,8] = add(%0, %2)
  %4: f32[4,8] = tanh(%3)
  output "y" = %4
})") == Lines{"group 0 pointwise root=%4 nodes=[%0, %1, %2, %3, %4] inputs=[%x, %b] "
              "ops=[exp, reshape, broadcast_to, add, tanh]"});
}

TEST_CASE("fusion: a reduction takes a pointwise prologue and an epilogue", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  %0: f32[4,8] = exp(%x)
  %1: f32[4,8] = mul(%0, %x)
  %2: f32[4] = reduce_sum(%1) {axes = [1]}
  %3: f32[4] = sqrt(%2)
  %4: f32[4] = neg(%3)
  output "y" = %4
})") == Lines{"group 0 reduction root=%4 anchor=%2 nodes=[%0, %1, %2, %3, %4] inputs=[%x] "
              "ops=[exp, mul, reduce_sum, sqrt, neg]"});
}

TEST_CASE("fusion: the epilogue stops where the anchor's value would broadcast",
          "[passes][fusion]") {
  // neg keeps the reduced shape [4,1]; add broadcasts it to [4,8].
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  %0: f32[4,1] = reduce_max(%x) {axes = [1], keepdims = true}
  %1: f32[4,1] = neg(%0)
  %2: f32[4,8] = add(%x, %1)
  output "y" = %2
})") == Lines{
            "group 0 reduction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x] ops=[reduce_max, neg]",
            "group 1 pointwise root=%2 nodes=[%2] inputs=[%x, %1] ops=[add]"});
  // A matmul result added to a larger tensor: the sum has another shape.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  input %y: f32[3,4,6]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[3,4,6] = add(%0, %y)
  output "y" = %1
})") == Lines{"group 0 contraction root=%0 anchor=%0 nodes=[%0] inputs=[%x, %w] ops=[matmul]",
              "group 1 pointwise root=%1 nodes=[%1] inputs=[%0, %y] ops=[add]"});
}

TEST_CASE("fusion: the epilogue stops at data movement", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = relu(%0)
  %2: f32[6,4] = transpose(%1) {perm = [1, 0]}
  %3: f32[6,4] = exp(%2)
  output "y" = %3
})") == Lines{"group 0 contraction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x, %w] "
              "ops=[matmul, relu]",
              "group 1 pointwise root=%3 nodes=[%2, %3] inputs=[%1] ops=[transpose, exp]"});
}

TEST_CASE("fusion: matmul with bias, relu and cast as its epilogue", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  param %b: f32[6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = broadcast_to(%b) {shape = [4, 6]}
  %2: f32[4,6] = add(%0, %1)
  %3: f32[4,6] = relu(%2)
  %4: f16[4,6] = cast(%3) {dtype = f16}
  output "y" = %4
})") == Lines{"group 0 contraction root=%4 anchor=%0 nodes=[%0, %1, %2, %3, %4] "
              "inputs=[%x, %w, %b] ops=[matmul, broadcast_to, add, relu, cast]"});
}

TEST_CASE("fusion: an epilogue may be a DAG with one exit", "[passes][fusion]") {
  // silu written out: mul(m, sigmoid(m)) reads the anchor twice.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = sigmoid(%0)
  %2: f32[4,6] = mul(%0, %1)
  output "y" = %2
})") == Lines{"group 0 contraction root=%2 anchor=%0 nodes=[%0, %1, %2] inputs=[%x, %w] "
              "ops=[matmul, sigmoid, mul]"});
  // relu's value goes to two outputs: the epilogue ends at relu.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = relu(%0)
  %2: f32[4,6] = neg(%1)
  %3: f32[4,6] = abs(%1)
  output "a" = %2
  output "b" = %3
})") == Lines{"group 0 contraction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x, %w] "
              "ops=[matmul, relu]",
              "group 1 pointwise root=%2 nodes=[%2] inputs=[%1] ops=[neg]",
              "group 2 pointwise root=%3 nodes=[%3] inputs=[%1] ops=[abs]"});
}

TEST_CASE("fusion: contraction operands are always materialized", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,8] = relu(%x)
  %1: f32[8,6] = neg(%w)
  %2: f32[4,6] = matmul(%0, %1)
  output "y" = %2
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[relu]",
              "group 1 pointwise root=%1 nodes=[%1] inputs=[%w] ops=[neg]",
              "group 2 contraction root=%2 anchor=%2 nodes=[%2] inputs=[%0, %1] ops=[matmul]"});
}

TEST_CASE("fusion: conv2d takes bias and relu; the pool after it stays alone", "[passes][fusion]") {
  // The free ops between two anchors go to the earlier one's epilogue.
  CHECK(fuse(R"(graph @g {
  input %x: f32[1,2,6,6]
  param %w: f32[3,2,3,3]
  param %b: f32[3]
  %0: f32[1,3,4,4] = conv2d(%x, %w)
  %1: f32[3,1,1] = reshape(%b) {shape = [3, 1, 1]}
  %2: f32[1,3,4,4] = add(%0, %1)
  %3: f32[1,3,4,4] = relu(%2)
  %4: f32[1,3,2,2] = max_pool2d(%3) {kernel = [2, 2], stride = [2, 2]}
  output "y" = %4
})") == Lines{"group 0 contraction root=%3 anchor=%0 nodes=[%0, %1, %2, %3] inputs=[%x, %w, %b] "
              "ops=[conv2d, reshape, add, relu]",
              "group 1 pooling root=%4 anchor=%4 nodes=[%4] inputs=[%3] ops=[max_pool2d]"});
}

TEST_CASE("fusion: pooling takes a prologue and an epilogue", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[1,2,6,6]
  %0: f32[1,2,6,6] = relu(%x)
  %1: f32[1,2,3,3] = avg_pool2d(%0) {kernel = [2, 2], stride = [2, 2]}
  %2: f32[1,2,3,3] = mul(%1, %1)
  output "y" = %2
})") == Lines{"group 0 pooling root=%2 anchor=%1 nodes=[%0, %1, %2] inputs=[%x] "
              "ops=[relu, avg_pool2d, mul]"});
}

TEST_CASE("fusion: softmax and layer_norm are row kernels with prologue and epilogue",
          "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  %0: f32[] = constant() {dtype = f32, shape = [], value = [0.5]}
  %1: f32[4,8] = mul(%x, %0)
  %2: f32[4,8] = softmax(%1)
  %3: f32[4,8] = log(%2)
  output "y" = %3
})") == Lines{"group 0 row_norm root=%3 anchor=%2 nodes=[%0, %1, %2, %3] inputs=[%x] "
              "ops=[constant, mul, softmax, log]"});
  CHECK(fuse(R"(graph @g {
  input %x: f32[2,4,8]
  input %r: f32[2,4,8]
  param %g: f32[8]
  param %b: f32[8]
  %0: f32[2,4,8] = add(%x, %r)
  %1: f32[2,4,8] = layer_norm(%0, %g, %b)
  %2: f32[2,4,8] = gelu(%1)
  output "y" = %2
})") == Lines{"group 0 row_norm root=%2 anchor=%1 nodes=[%0, %1, %2] inputs=[%x, %r, %g, %b] "
              "ops=[add, layer_norm, gelu]"});
}

TEST_CASE("fusion: at most one anchor per group", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  %0: f32[4] = reduce_max(%x) {axes = [1]}
  %1: f32[] = reduce_sum(%0) {axes = [0]}
  output "y" = %1
})") == Lines{"group 0 reduction root=%0 anchor=%0 nodes=[%0] inputs=[%x] ops=[reduce_max]",
              "group 1 reduction root=%1 anchor=%1 nodes=[%1] inputs=[%0] ops=[reduce_sum]"});
  // Two matmuls meeting in one add: the earlier takes the add as epilogue.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %v: f32[8,6]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %v)
  %1: f32[4,6] = matmul(%x, %w)
  %2: f32[4,6] = add(%0, %1)
  %3: f32[4,6] = relu(%2)
  output "y" = %3
})") == Lines{"group 0 contraction root=%1 anchor=%1 nodes=[%1] inputs=[%x, %w] ops=[matmul]",
              "group 1 contraction root=%3 anchor=%0 nodes=[%0, %2, %3] inputs=[%x, %v, %1] "
              "ops=[matmul, add, relu]"});
}

TEST_CASE("fusion: free ops after a contraction go to its epilogue, not the next prologue",
          "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = exp(%0)
  %2: f32[4] = reduce_sum(%1) {axes = [1]}
  output "y" = %2
})") == Lines{"group 0 contraction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x, %w] "
              "ops=[matmul, exp]",
              "group 1 reduction root=%2 anchor=%2 nodes=[%2] inputs=[%1] ops=[reduce_sum]"});
}

TEST_CASE("fusion: residual adds join the epilogue", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,8]
  param %b: f32[8]
  %0: f32[4,8] = matmul(%x, %w)
  %1: f32[4,8] = add(%0, %b)
  %2: f32[4,8] = add(%1, %x)
  %3: f32[4,8] = relu(%2)
  output "y" = %3
})") == Lines{"group 0 contraction root=%3 anchor=%0 nodes=[%0, %1, %2, %3] "
              "inputs=[%x, %w, %b] ops=[matmul, add, add, relu]"});
  // The residual is an intermediate read by the next matmul too: it is
  // materialized once and read by both.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %v: f32[8,8]
  param %w: f32[8,8]
  %0: f32[4,8] = matmul(%x, %v)
  %1: f32[4,8] = relu(%0)
  %2: f32[4,8] = matmul(%1, %w)
  %3: f32[4,8] = add(%2, %1)
  output "y" = %3
})") == Lines{"group 0 contraction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x, %v] "
              "ops=[matmul, relu]",
              "group 1 contraction root=%3 anchor=%2 nodes=[%2, %3] inputs=[%1, %w] "
              "ops=[matmul, add]"});
}

TEST_CASE("fusion: a value used by two groups is materialized once", "[passes][fusion]") {
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[5]
  %0: f32[5] = exp(%x)
  %1: f32[5] = neg(%0)
  %2: f32[5] = abs(%0)
  output "a" = %1
  output "b" = %2
})");
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  CHECK(listingLines(*graph, plan) ==
        Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[exp]",
              "group 1 pointwise root=%1 nodes=[%1] inputs=[%0] ops=[neg]",
              "group 2 pointwise root=%2 nodes=[%2] inputs=[%0] ops=[abs]"});
  const ir::Node *exp = graph->topologicalOrder()[0];
  int rootedAtExp = 0;
  for (const FusionGroup &group : plan.groups)
    rootedAtExp += group.root == exp;
  CHECK(rootedAtExp == 1);
  REQUIRE(plan.groupOf(exp) != nullptr);
  CHECK(plan.groupOf(exp)->id == 0);
}

TEST_CASE("fusion: uses inside one group do not materialize a value", "[passes][fusion]") {
  // Used twice by one node, and by two nodes of one group.
  CHECK(fuse(R"(graph @g {
  input %x: f32[5]
  %0: f32[5] = exp(%x)
  %1: f32[5] = mul(%0, %0)
  %2: f32[5] = neg(%1)
  %3: f32[5] = abs(%1)
  %4: f32[5] = add(%2, %3)
  output "y" = %4
})") == Lines{"group 0 pointwise root=%4 nodes=[%0, %1, %2, %3, %4] inputs=[%x] "
              "ops=[exp, mul, neg, abs, add]"});
}

TEST_CASE("fusion: an output that is also consumed is a root", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[5]
  %0: f32[5] = exp(%x)
  %1: f32[5] = neg(%0)
  output "e" = %0
  output "y" = %1
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[exp]",
              "group 1 pointwise root=%1 nodes=[%1] inputs=[%0] ops=[neg]"});
  // Inside an epilogue too: relu is an output, so the group ends there.
  CHECK(fuse(R"(graph @g {
  input %x: f32[4,8]
  param %w: f32[8,6]
  %0: f32[4,6] = matmul(%x, %w)
  %1: f32[4,6] = relu(%0)
  %2: f32[4,6] = neg(%1)
  output "r" = %1
  output "y" = %2
})") == Lines{"group 0 contraction root=%1 anchor=%0 nodes=[%0, %1] inputs=[%x, %w] "
              "ops=[matmul, relu]",
              "group 1 pointwise root=%2 nodes=[%2] inputs=[%1] ops=[neg]"});
}

TEST_CASE("fusion: reshapes of a materialized value are aliases", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[6,4]
  param %w: f32[12,5]
  %0: f32[2,12] = reshape(%x) {shape = [2, 12]}
  %1: f32[2,5] = matmul(%0, %w)
  %2: f32[1,2,5] = unsqueeze(%1) {axes = [0]}
  %3: f32[2,5] = squeeze(%2) {axes = [0]}
  output "y" = %3
})") == Lines{"group 0 alias root=%0 nodes=[%0] inputs=[%x] ops=[reshape]",
              "group 1 contraction root=%1 anchor=%1 nodes=[%1] inputs=[%0, %w] ops=[matmul]",
              "group 2 alias root=%3 nodes=[%2, %3] inputs=[%1] ops=[unsqueeze, squeeze]"});
  // A reshape of a value computed in the same group is just pointwise.
  CHECK(fuse(R"(graph @g {
  input %x: f32[6,4]
  %0: f32[6,4] = exp(%x)
  %1: f32[24] = reshape(%0) {shape = [24]}
  output "y" = %1
})") == Lines{"group 0 pointwise root=%1 nodes=[%0, %1] inputs=[%x] ops=[exp, reshape]"});
  // ...unless a contraction reads it: the producer's kernel writes its own shape (no index
  // division) and the reshape is an alias of that.
  CHECK(fuse(R"(graph @g {
  input %x: f32[6,4]
  param %w: f32[12,5]
  %0: f32[6,4] = exp(%x)
  %1: f32[2,12] = reshape(%0) {shape = [2, 12]}
  %2: f32[2,5] = matmul(%1, %w)
  output "y" = %2
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[exp]",
              "group 1 alias root=%1 nodes=[%1] inputs=[%0] ops=[reshape]",
              "group 2 contraction root=%2 anchor=%2 nodes=[%2] inputs=[%1, %w] ops=[matmul]"});
}

TEST_CASE("fusion: graph inputs used as outputs need no group", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[3]
  param %p: f32[3]
  %0: f32[3] = exp(%x)
  output "same" = %x
  output "param" = %p
  output "e" = %0
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[exp]"});
  CHECK(fuse(R"(graph @g {
  input %x: f32[3]
  output "same" = %x
})")
            .empty());
}

TEST_CASE("fusion: a large constant is its own group", "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[2,3]
  %0: f32[2,3] = constant() {dtype = f32, shape = [2, 3], value = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
  %1: f32[2,3] = add(%x, %0)
  %2: f32[2,3] = mul(%1, %0)
  output "y" = %2
})") == Lines{"group 0 constant root=%0 nodes=[%0] inputs=[] ops=[constant]",
              "group 1 pointwise root=%2 nodes=[%1, %2] inputs=[%x, %0] ops=[add, mul]"});
}

TEST_CASE("fusion: scalar constants and iotas are copied into every group that reads them",
          "[passes][fusion]") {
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[2,3]
  %0: f32[] = constant() {dtype = f32, shape = [], value = [2.0]}
  %1: f32[2,3] = iota() {axis = 1, dtype = f32, shape = [2, 3]}
  %2: f32[2,3] = mul(%x, %0)
  %3: f32[2,3] = add(%2, %1)
  %4: f32[2,3] = sub(%x, %0)
  %5: f32[2,3] = div(%4, %1)
  output "a" = %3
  output "b" = %5
})");
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  CHECK(listingLines(*graph, plan) ==
        Lines{"group 0 pointwise root=%3 nodes=[%0, %1, %2, %3] inputs=[%x] "
              "ops=[constant, iota, mul, add]",
              "group 1 pointwise root=%5 nodes=[%0, %1, %4, %5] inputs=[%x] "
              "ops=[constant, iota, sub, div]"});
  const ir::Node *scalar = graph->topologicalOrder()[0];
  CHECK(plan.groups[0].contains(scalar));
  CHECK(plan.groups[1].contains(scalar));
  CHECK(plan.groupOf(scalar) == &plan.groups[0]);
}

TEST_CASE("fusion: a scalar or iota is materialized when an output or a matmul needs it",
          "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[2,3]
  %0: f32[] = constant() {dtype = f32, shape = [], value = [3.0]}
  %1: f32[2,3] = mul(%x, %0)
  output "c" = %0
  output "y" = %1
})") == Lines{"group 0 constant root=%0 nodes=[%0] inputs=[] ops=[constant]",
              "group 1 pointwise root=%1 nodes=[%1] inputs=[%x, %0] ops=[mul]"});
  CHECK(fuse(R"(graph @g {
  input %x: f32[2,3]
  %0: f32[3,4] = iota() {axis = 0, dtype = f32, shape = [3, 4]}
  %1: f32[2,4] = matmul(%x, %0)
  output "y" = %1
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[] ops=[iota]",
              "group 1 contraction root=%1 anchor=%1 nodes=[%1] inputs=[%x, %0] ops=[matmul]"});
}

TEST_CASE("fusion: a dead node is a group of its own, a dead scalar is in none",
          "[passes][fusion]") {
  CHECK(fuse(R"(graph @g {
  input %x: f32[3]
  %0: f32[3] = neg(%x)
  %1: f32[] = constant() {dtype = f32, shape = [], value = [1.0]}
  %2: f32[3] = exp(%x)
  output "y" = %2
})") == Lines{"group 0 pointwise root=%0 nodes=[%0] inputs=[%x] ops=[neg]",
              "group 1 pointwise root=%2 nodes=[%2] inputs=[%x] ops=[exp]"});
}

TEST_CASE("fusion: groups are listed in a stable topological order", "[passes][fusion]") {
  // Two independent chains interleaved: groups follow their roots' positions.
  CHECK(fuse(R"(graph @g {
  input %x: f32[3]
  input %y: f32[3]
  %0: f32[3] = exp(%y)
  %1: f32[3] = exp(%x)
  %2: f32[3] = neg(%1)
  %3: f32[] = reduce_sum(%0) {axes = [0]}
  output "b" = %3
  output "a" = %2
})") == Lines{"group 0 pointwise root=%2 nodes=[%1, %2] inputs=[%x] ops=[exp, neg]",
              "group 1 reduction root=%3 anchor=%3 nodes=[%0, %3] inputs=[%y] "
              "ops=[exp, reduce_sum]"});
}

TEST_CASE("fusion: attention must be decomposed first", "[passes][fusion]") {
  auto graph = parseOrFail(R"(graph @g {
  input %q: f32[2,4,8]
  input %k: f32[2,4,8]
  input %v: f32[2,4,8]
  %0: f32[2,4,8] = exp(%q)
  %1: f32[2,4,8] = scaled_dot_product_attention(%0, %k, %v) {scale = 0.35}
  output "y" = %1
})");
  auto plan = planFusion(*graph);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code() == ErrorCode::Unsupported);
  CHECK(plan.error().message() ==
        "fusion: scaled_dot_product_attention (%1) has no kernel of its own; decompose it first "
        "(the 'decompose' pass)");
  REQUIRE(plan.error().location());
  CHECK(plan.error().location()->line == 6);
}

TEST_CASE("fusion: every group kind has a name", "[passes][fusion]") {
  CHECK(groupKindName(GroupKind::Pointwise) == "pointwise");
  CHECK(groupKindName(GroupKind::Reduction) == "reduction");
  CHECK(groupKindName(GroupKind::RowNorm) == "row_norm");
  CHECK(groupKindName(GroupKind::Pooling) == "pooling");
  CHECK(groupKindName(GroupKind::Contraction) == "contraction");
  CHECK(groupKindName(GroupKind::Constant) == "constant");
  CHECK(groupKindName(GroupKind::Alias) == "alias");
  CHECK(groupKindName(GroupKind::Opaque) == "opaque");
}

TEST_CASE("fusion refuses a graph with a cycle", "[passes][fusion]") {
  // Only a broken rewrite makes one (the verifier rejects it); planning must
  // say so rather than loop or crash.
  ir::Graph graph("cyclic");
  ir::Value *x = *graph.addInput("x", ir::TensorType{DType::F32, {3}});
  ir::Value *a = *graph.addNode(ir::OpKind::Exp, {x});
  ir::Value *b = *graph.addNode(ir::OpKind::Neg, {a});
  REQUIRE(graph.addOutput("y", b));
  a->definingNode()->setOperand(0, b);
  auto plan = planFusion(graph);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().message() == "fusion: graph @cyclic has a cycle; verify it first");
  a->definingNode()->setOperand(0, x); // unbroken again, so the graph can be destroyed
}

TEST_CASE("fusion: a chain longer than kMaxFusedDepth becomes several kernels",
          "[passes][fusion]") {
  // matmul, 600 tanh, reduce_sum: the epilogue claim stops at 256 ops, the
  // reduction's prologue at 256, and the 88 ops between are one pointwise group.
  static_assert(kMaxFusedDepth == 256, "the counts below assume a bound of 256");
  std::string text = "graph @g {\n  input %x: f32[3,5]\n  param %w: f32[5,7]\n"
                     "  %m: f32[3,7] = matmul(%x, %w)\n";
  std::string previous = "%m";
  for (int i = 0; i < 600; ++i) {
    text += fmt::format("  %t{}: f32[3,7] = tanh({})\n", i, previous);
    previous = fmt::format("%t{}", i);
  }
  text += fmt::format("  %s: f32[3] = reduce_sum({}) {{axes = [1]}}\n  output \"y\" = %s\n}}\n",
                      previous);
  auto graph = parseOrFail(text);
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  REQUIRE(plan.groups.size() == 3);
  CHECK(plan.groups[0].kind == GroupKind::Contraction);
  CHECK(plan.groups[0].nodes.size() == 257);
  CHECK(plan.groups[1].kind == GroupKind::Pointwise);
  CHECK(plan.groups[1].nodes.size() == 88);
  CHECK(plan.groups[2].kind == GroupKind::Reduction);
  CHECK(plan.groups[2].nodes.size() == 257);
}

TEST_CASE("fusion: a group reads at most kMaxKernelInputs values", "[passes][fusion]") {
  // A sum of 100 inputs as a chain of adds: each add brings one more input,
  // so the chain is cut where the group would read a 65th value.
  static_assert(kMaxKernelInputs == 64, "the counts below assume a bound of 64");
  std::string text = "graph @g {\n";
  for (int i = 0; i < 100; ++i)
    text += fmt::format("  input %x{}: f32[3]\n", i);
  text += "  %s1: f32[3] = add(%x0, %x1)\n";
  for (int i = 2; i < 100; ++i)
    text += fmt::format("  %s{}: f32[3] = add(%s{}, %x{})\n", i, i - 1, i);
  text += "  output \"y\" = %s99\n}\n";
  auto graph = parseOrFail(text);
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  REQUIRE(plan.groups.size() == 2);
  // The consumer side fills first: %s99 back to %s37 read %x37..%x99 and %s36.
  CHECK(plan.groups[1].inputs.size() == 64);
  CHECK(plan.groups[1].nodes.size() == 63);
  CHECK(plan.groups[0].inputs.size() == 37);
  CHECK(plan.groups[0].nodes.size() == 36);
}

TEST_CASE("fusion: copied scalars do not count against the input bound", "[passes][fusion]") {
  // 64 inputs, each scaled by the same scalar constant and summed: the
  // constant is copied into the kernel, so one group reads exactly 64 values.
  std::string text = "graph @g {\n";
  for (int i = 0; i < 64; ++i)
    text += fmt::format("  input %x{}: f32[3]\n", i);
  text += "  %c: f32[] = constant() {dtype = f32, shape = [], value = [2.0]}\n";
  text += "  %m0: f32[3] = mul(%x0, %c)\n";
  for (int i = 1; i < 64; ++i)
    text += fmt::format("  %m{0}: f32[3] = mul(%x{0}, %c)\n  %s{0}: f32[3] = add({1}, %m{0})\n",
                        i, i == 1 ? std::string("%m0") : fmt::format("%s{}", i - 1));
  text += "  output \"y\" = %s63\n}\n";
  auto graph = parseOrFail(text);
  FusionPlan plan = planOrFail(*graph);
  checkPlanInvariants(*graph, plan);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].inputs.size() == 64);
}
