// The "layout" pass: NCHW convolutions that suit tensor cores become NHWC
// ones, the transposes sink through elementwise ops, batch norms and pools,
// the pairs between convolutions cancel, and the values stay the same.
#include "PassTestUtil.h"

#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "passes/graph/GraphPasses.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

/// What a GPU pipeline runs (the CPU pipeline with Chained): layout, then the cleanup that
/// cancels pairs.
bool applyLayout(Graph &graph, NhwcConvolutions which = NhwcConvolutions::TensorCoreOperands) {
  bool changed = runPassOrFail(createNhwcLayoutPass(which), graph);
  for (auto *create : {&createAlgebraicSimplifyPass, &createCommonSubexpressionEliminationPass,
                       &createDeadCodeEliminationPass})
    runPassOrFail((*create)(), graph);
  return changed;
}

/// Transposes of computed activations (not of inputs, parameters or constants).
size_t activationTransposes(const Graph &graph) {
  size_t count = 0;
  for (const Node *node : nodesOfKind(graph, OpKind::Transpose))
    count += node->operand(0)->definingNode() != nullptr &&
             node->operand(0)->definingNode()->kind() != OpKind::Reshape;
  return count;
}

/// The pass moves data only; the reference convolution may sum in another
/// order per layout, and a bf16 result can then round one ulp apart.
void checkSameValues(const Graph &before, const Graph &after) {
  for (uint64_t seed : {1, 2}) {
    NamedTensors bindings = randomBindings(before, seed);
    requireCloseOutputs(interpretOrFail(before, bindings), interpretOrFail(after, bindings), 2e-2);
  }
}

// Two VGG-style stages in bf16 (as bf16-mixed leaves them): conv, bias, relu,
// pool, conv, then a flatten for the classifier.
constexpr std::string_view kVggStages = R"(graph @vgg {
  input %x: bf16[2,8,10,10]
  param %w1: bf16[16,8,3,3]
  param %b1: f32[16,1,1]
  param %w2: bf16[16,16,3,3]
  %0: bf16[2,16,10,10] = conv2d(%x, %w1) {padding = [1, 1, 1, 1]}
  %1: f32[2,16,10,10] = cast(%0) {dtype = f32}
  %2: f32[2,16,10,10] = add(%1, %b1)
  %3: f32[2,16,10,10] = relu(%2)
  %4: f32[2,16,5,5] = max_pool2d(%3) {kernel = [2, 2], stride = [2, 2]}
  %5: bf16[2,16,5,5] = cast(%4) {dtype = bf16}
  %6: bf16[2,16,5,5] = conv2d(%5, %w2) {padding = [1, 1, 1, 1]}
  %7: f32[2,16,5,5] = cast(%6) {dtype = f32}
  %8: f32[2,400] = reshape(%7) {shape = [2, 400]}
  output "features" = %8
})";

} // namespace

TEST_CASE("NCHW convolutions run as NHWC and the transposes between them cancel",
          "[passes][layout]") {
  auto original = parseOrFail(kVggStages);
  auto graph = parseOrFail(kVggStages);
  REQUIRE(applyLayout(*graph));
  INFO(printGraph(*graph));
  auto convs = nodesOfKind(*graph, OpKind::Conv2D);
  REQUIRE(convs.size() == 2);
  for (const Node *conv : convs)
    CHECK(getString(conv->attrs(), "layout") == "nhwc");
  auto pools = nodesOfKind(*graph, OpKind::MaxPool2D);
  REQUIRE(pools.size() == 1);
  CHECK(getString(pools[0]->attrs(), "layout") == "nhwc");
  // Left: the input's transpose, the filters', and one back to NCHW before
  // the flatten; none between the two stages. The bias [16, 1, 1] only needs
  // a reshape to [1, 1, 1, 16] ("simplify": its transpose moves unit axes).
  CHECK(activationTransposes(*graph) == 1);
  CHECK(nodesOfKind(*graph, OpKind::Transpose).size() == 4);
  auto reshapes = nodesOfKind(*graph, OpKind::Reshape);
  const Node *flatten = reshapes.back();
  REQUIRE(flatten->operand(0)->definingNode() != nullptr);
  CHECK(flatten->operand(0)->definingNode()->kind() == OpKind::Transpose);
  checkSameValues(*original, *graph);
}

TEST_CASE("a residual block keeps NHWC through batch norm and the shortcut add",
          "[passes][layout]") {
  constexpr std::string_view kResidual = R"(graph @residual {
    input %x: f16[2,8,6,6]
    param %w1: f16[8,8,3,3]
    param %w2: f16[8,8,3,3]
    param %scale: f32[8]
    param %bias: f32[8]
    param %mean: f32[8]
    param %var: f32[8]
    %0: f16[2,8,6,6] = conv2d(%x, %w1) {padding = [1, 1, 1, 1]}
    %1: f32[2,8,6,6] = cast(%0) {dtype = f32}
    %2: f32[2,8,6,6] = batch_norm(%1, %scale, %bias, %mean, %var)
    %3: f32[2,8,6,6] = relu(%2)
    %4: f16[2,8,6,6] = cast(%3) {dtype = f16}
    %5: f16[2,8,6,6] = conv2d(%4, %w2) {padding = [1, 1, 1, 1]}
    %6: f16[2,8,6,6] = add(%5, %x)
    %7: f16[2,8,6,6] = relu(%6)
    %8: f16[2,8,1,1] = global_avg_pool(%7)
    output "y" = %8
  })";
  auto original = parseOrFail(kResidual);
  auto graph = parseOrFail(kResidual);
  REQUIRE(applyLayout(*graph));
  INFO(printGraph(*graph));
  auto norms = nodesOfKind(*graph, OpKind::BatchNorm);
  REQUIRE(norms.size() == 1);
  CHECK(getInt(norms[0]->attrs(), "axis") == 3); // the channels, now last
  auto gap = nodesOfKind(*graph, OpKind::GlobalAvgPool);
  REQUIRE(gap.size() == 1);
  CHECK(getString(gap[0]->attrs(), "layout") == "nhwc");
  // The shortcut reuses the first convolution's transpose of x: one
  // transpose of x and the filters'. After the global pool ([2, 1, 1, 8])
  // the way back to NCHW is a reshape.
  CHECK(activationTransposes(*graph) == 0);
  CHECK(nodesOfKind(*graph, OpKind::Transpose).size() == 3);
  CHECK(graph->outputs().at(0).value->definingNode()->kind() == OpKind::Reshape);
  checkSameValues(*original, *graph);
}

TEST_CASE("convolutions that cannot use tensor cores stay NCHW", "[passes][layout]") {
  // Three input channels (6 bytes a pixel), f32 without tf32, grouped, e4m3 with two channels
  // (2 bytes a pixel).
  auto graph = parseOrFail(R"(graph @stays {
    input %rgb: bf16[1,3,8,8]
    param %w0: bf16[4,3,3,3]
    input %x: f32[1,4,8,8]
    param %w1: f32[4,4,3,3]
    param %w2: bf16[4,2,3,3]
    input %y: bf16[1,4,8,8]
    input %z: f8e4m3[1,2,8,8]
    param %w3: f8e4m3[4,2,1,1]
    %0: bf16[1,4,6,6] = conv2d(%rgb, %w0)
    %1: f32[1,4,6,6] = conv2d(%x, %w1)
    %2: bf16[1,4,6,6] = conv2d(%y, %w2) {groups = 2}
    %3: f8e4m3[1,4,8,8] = conv2d(%z, %w3)
    output "a" = %0
    output "b" = %1
    output "c" = %2
    output "d" = %3
  })");
  CHECK_FALSE(applyLayout(*graph));
  for (const Node *conv : nodesOfKind(*graph, OpKind::Conv2D))
    CHECK(getString(conv->attrs(), "layout") == "nchw");
  CHECK(nodesOfKind(*graph, OpKind::Transpose).empty());

  // The same f32 convolution allowing tf32 does move.
  constexpr std::string_view kTf32 = R"(graph @tf32 {
    input %x: f32[1,4,8,8]
    param %w: f32[4,4,3,3]
    %0: f32[1,4,6,6] = conv2d(%x, %w) {allow_tf32 = true}
    output "y" = %0
  })";
  auto tf32 = parseOrFail(kTf32);
  auto original = parseOrFail(kTf32);
  REQUIRE(applyLayout(*tf32));
  CHECK(getString(nodesOfKind(*tf32, OpKind::Conv2D)[0]->attrs(), "layout") == "nhwc");
  checkSameValues(*original, *tf32);

  // And e4m3 with four channels (one 4-byte copy a pixel; the pipeline runs the pass under fp8
  // only on targets with e4m3 tensor cores).
  constexpr std::string_view kE4m3 = R"(graph @e4m3 {
    input %x: f8e4m3[1,4,8,8]
    param %w: f8e4m3[4,4,3,3]
    %0: f8e4m3[1,4,6,6] = conv2d(%x, %w)
    output "y" = %0
  })";
  auto e4m3 = parseOrFail(kE4m3);
  auto e4m3Original = parseOrFail(kE4m3);
  REQUIRE(applyLayout(*e4m3));
  CHECK(getString(nodesOfKind(*e4m3, OpKind::Conv2D)[0]->attrs(), "layout") == "nhwc");
  checkSameValues(*e4m3Original, *e4m3);
}

TEST_CASE("layout-cpu runs the convolutions that feed one another as NHWC", "[passes][layout]") {
  // The CPU's choice: f32 (no tf32) with three input channels, a relu, then a 1x1 conv: both
  // move. The grouped one after them stays NCHW, and so does the i8 one on its own (its
  // transposes would not cancel against another's).
  constexpr std::string_view kCpu = R"(graph @cpu {
    input %rgb: f32[2,3,9,7]
    param %w0: f32[8,3,3,3]
    param %w1: f32[8,8,1,1]
    param %w2: f32[8,4,3,3]
    input %q: i8[1,4,6,6]
    param %wq: i8[4,4,3,3]
    %0: f32[2,8,7,5] = conv2d(%rgb, %w0)
    %1: f32[2,8,7,5] = relu(%0)
    %2: f32[2,8,7,5] = conv2d(%1, %w1)
    %3: f32[2,8,7,5] = conv2d(%2, %w2) {groups = 2, padding = [1, 1, 1, 1]}
    %4: i32[1,4,4,4] = conv2d(%q, %wq) {accumulate = i32}
    output "y" = %3
    output "z" = %4
  })";
  auto graph = parseOrFail(kCpu);
  auto original = parseOrFail(kCpu);
  REQUIRE(applyLayout(*graph, NhwcConvolutions::Chained));
  INFO(printGraph(*graph));
  auto convs = nodesOfKind(*graph, OpKind::Conv2D);
  REQUIRE(convs.size() == 4);
  size_t nhwc = 0;
  for (const Node *conv : convs) {
    bool moves =
        getInt(conv->attrs(), "groups") == 1 && conv->operand(0)->type().dtype == DType::F32;
    CHECK(getString(conv->attrs(), "layout") == (moves ? "nhwc" : "nchw"));
    nhwc += moves;
  }
  CHECK(nhwc == 2);
  // No transpose pair is left between the first two: only the one back to NCHW before the
  // grouped convolution.
  CHECK(activationTransposes(*graph) == 1);
  checkSameValues(*original, *graph);
  // The tensor-core rule moves none of them.
  auto untouched = parseOrFail(kCpu);
  CHECK_FALSE(applyLayout(*untouched));
}

TEST_CASE("layout-cpu follows a residual add and a pool to the next convolution",
          "[passes][layout]") {
  // conv -> batch norm -> relu -> max pool -> conv, and a shortcut add: all one chain; a
  // convolution whose result only reaches a matmul (through a reshape) is on its own.
  constexpr std::string_view kBlock = R"(graph @block {
    input %x: f32[1,8,8,8]
    param %w1: f32[8,8,3,3]
    param %w2: f32[8,8,3,3]
    param %s: f32[8]
    param %b: f32[8]
    param %m: f32[8]
    param %v: f32[8]
    input %y: f32[1,4,6,6]
    param %w3: f32[2,4,3,3]
    param %d: f32[32,5]
    %0: f32[1,8,8,8] = conv2d(%x, %w1) {padding = [1, 1, 1, 1]}
    %1: f32[1,8,8,8] = batch_norm(%0, %s, %b, %m, %v)
    %2: f32[1,8,8,8] = relu(%1)
    %3: f32[1,8,8,8] = add(%2, %x)
    %4: f32[1,8,4,4] = max_pool2d(%3) {kernel = [2, 2], stride = [2, 2]}
    %5: f32[1,8,4,4] = conv2d(%4, %w2) {padding = [1, 1, 1, 1]}
    %6: f32[1,2,4,4] = conv2d(%y, %w3)
    %7: f32[1,32] = reshape(%6) {shape = [1, 32]}
    %8: f32[1,5] = matmul(%7, %d)
    output "a" = %5
    output "b" = %8
  })";
  auto graph = parseOrFail(kBlock);
  auto original = parseOrFail(kBlock);
  REQUIRE(applyLayout(*graph, NhwcConvolutions::Chained));
  INFO(printGraph(*graph));
  size_t nhwc = 0;
  for (const Node *conv : nodesOfKind(*graph, OpKind::Conv2D))
    nhwc += getString(conv->attrs(), "layout") == "nhwc";
  CHECK(nhwc == 2);
  CHECK(getString(nodesOfKind(*graph, OpKind::MaxPool2D)[0]->attrs(), "layout") == "nhwc");
  checkSameValues(*original, *graph);
}
