// The work counted for the profiler: FLOPs per op at odd sizes against
// formulas worked out here, a rule for every op, and bytes moved equal to the
// kernels' buffers in compiled plans.
#include "compiler/Compile.h"
#include "compiler/KernelCost.h"
#include "ir/graph/Parser.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace kiln::test {
namespace {

std::unique_ptr<ir::Graph> parseOrFail(const std::string &text) {
  auto graph = ir::parseGraph(text);
  INFO(text);
  if (!graph)
    FAIL(graph.error().str());
  return std::move(*graph);
}

/// The node that defines output `name`.
const ir::Node &outputNode(const ir::Graph &graph, const std::string &name) {
  for (const ir::GraphOutput &output : graph.outputs())
    if (output.name == name)
      return *output.value->definingNode();
  FAIL("no output " << name);
  throw std::logic_error("unreachable");
}

int64_t flopsOfOutput(const std::string &graphText, const std::string &output = "y") {
  auto graph = parseOrFail(graphText);
  return compiler::nodeFlops(outputNode(*graph, output));
}

TEST_CASE("matmul counts 2*M*N*K per batch, transposes and broadcasting included", "[cost]") {
  SECTION("batched with a broadcast operand") {
    // a [3, 7, 5] x b [5, 11]: 3 batches of 7x11 results, each a 5-long dot product.
    int64_t batch = 3, m = 7, k = 5, n = 11;
    CHECK(flopsOfOutput(R"(graph @g {
  input %a: f32[3,7,5]
  input %b: f32[5,11]
  %y: f32[3,7,11] = matmul(%a, %b)
  output "y" = %y
})") == 2 * batch * m * n * k);
  }
  SECTION("transposed a: K is a's second-to-last axis") {
    int64_t m = 13, k = 9, n = 1;
    CHECK(flopsOfOutput(R"(graph @g {
  input %a: f32[9,13]
  input %b: f32[1,9]
  %y: f32[13,1] = matmul(%a, %b) {transpose_a = true, transpose_b = true}
  output "y" = %y
})") == 2 * m * n * k);
  }
}

TEST_CASE("conv2d counts 2*N*OH*OW*OC*(IC/groups)*KH*KW in both layouts", "[cost]") {
  // N 2, IC 6, H 9, W 11; OC 4, groups 2, KH 3, KW 5; stride [2, 1];
  // padding [top 1, bottom 0, left 2, right 1].
  int64_t n = 2, ic = 6, oc = 4, groups = 2, kh = 3, kw = 5;
  int64_t oh = (9 + 1 + 0 - kh) / 2 + 1; // 4
  int64_t ow = (11 + 2 + 1 - kw) / 1 + 1; // 10
  int64_t expected = 2 * n * oh * ow * oc * (ic / groups) * kh * kw;
  SECTION("nchw") {
    CHECK(flopsOfOutput(fmt::format(R"(graph @g {{
  input %x: f32[2,6,9,11]
  input %w: f32[4,3,3,5]
  %y: f32[2,4,{},{}] = conv2d(%x, %w) {{groups = 2, stride = [2, 1], padding = [1, 0, 2, 1]}}
  output "y" = %y
}})",
                                    oh, ow)) == expected);
  }
  SECTION("nhwc") {
    CHECK(flopsOfOutput(fmt::format(R"(graph @g {{
  input %x: f32[2,9,11,6]
  input %w: f32[4,3,5,3]
  %y: f32[2,{},{},4] = conv2d(%x, %w) {{groups = 2, stride = [2, 1], padding = [1, 0, 2, 1], layout = "nhwc"}}
  output "y" = %y
}})",
                                    oh, ow)) == expected);
  }
}

TEST_CASE("elementwise ops count one per result element, transcendentals too", "[cost]") {
  auto graph = parseOrFail(R"(graph @g {
  input %a: f32[3,5,7]
  input %b: f32[7]
  %sum: f32[3,5,7] = add(%a, %b)
  %e: f32[3,5,7] = exp(%sum)
  %c: f16[3,5,7] = cast(%e) {dtype = f16}
  output "sum" = %sum
  output "e" = %e
  output "c" = %c
})");
  int64_t elements = 3 * 5 * 7;
  CHECK(compiler::nodeFlops(outputNode(*graph, "sum")) == elements);
  CHECK(compiler::nodeFlops(outputNode(*graph, "e")) == elements);
  CHECK(compiler::nodeFlops(outputNode(*graph, "c")) == elements);
}

TEST_CASE("reductions count one per input element; pooling one per window element", "[cost]") {
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[3,5,7]
  input %p: f32[1,2,7,9]
  %sum: f32[3,7] = reduce_sum(%x) {axes = [1]}
  %arg: i64[3,5] = argmax(%x) {axis = 2}
  %pool: f32[1,2,3,4] = max_pool2d(%p) {kernel = [3, 2], stride = [2, 2]}
  output "sum" = %sum
  output "arg" = %arg
  output "pool" = %pool
})");
  CHECK(compiler::nodeFlops(outputNode(*graph, "sum")) == 3 * 5 * 7);
  CHECK(compiler::nodeFlops(outputNode(*graph, "arg")) == 3 * 5 * 7);
  // Result 1x2x3x4, each the maximum of a 3x2 window.
  CHECK(compiler::nodeFlops(outputNode(*graph, "pool")) == (1 * 2 * 3 * 4) * (3 * 2));
}

TEST_CASE("row normalizations count their stated constant per element", "[cost]") {
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[3,13]
  param %scale: f32[13]
  param %bias: f32[13]
  %soft: f32[3,13] = softmax(%x)
  %norm: f32[3,13] = layer_norm(%x, %scale, %bias)
  output "soft" = %soft
  output "norm" = %norm
})");
  CHECK(compiler::nodeFlops(outputNode(*graph, "soft")) == 5 * 3 * 13);
  CHECK(compiler::nodeFlops(outputNode(*graph, "norm")) == 7 * 3 * 13);
}

TEST_CASE("attention counts its two matmuls and a scaled softmax per score", "[cost]") {
  // q [2, 5, 8], k [2, 9, 8], v [2, 9, 3]: 2*5*9 scores.
  int64_t scores = 2 * 5 * 9;
  int64_t expected = scores * (2 * 8 + 2 * 3 + 1 + 5);
  CHECK(flopsOfOutput(R"(graph @g {
  input %q: f32[2,5,8]
  input %k: f32[2,9,8]
  input %v: f32[2,9,3]
  %y: f32[2,5,3] = scaled_dot_product_attention(%q, %k, %v) {scale = 0.35}
  output "y" = %y
})") == expected);
}

TEST_CASE("data movement counts no arithmetic", "[cost]") {
  CHECK(flopsOfOutput(R"(graph @g {
  input %x: f32[3,5]
  %y: f32[5,3] = transpose(%x) {perm = [1, 0]}
  output "y" = %y
})") == 0);
}

TEST_CASE("every op in the table has a FLOP rule that fits its category", "[cost]") {
  using compiler::FlopRule;
  for (const ir::OpInfo &op : ir::allOps()) {
    INFO("op " << op.name << " (" << ir::opCategoryName(op.category) << ")");
    std::optional<FlopRule> rule = compiler::flopRuleOf(op.kind);
    REQUIRE(rule.has_value());
    switch (op.category) {
    case ir::OpCategory::Elementwise:
      CHECK((*rule == FlopRule::PerOutputElement || *rule == FlopRule::BatchNorm));
      break;
    case ir::OpCategory::Reduction:
      CHECK((*rule == FlopRule::PerInputElement || *rule == FlopRule::PoolingWindow ||
             *rule == FlopRule::RowNormalization));
      break;
    case ir::OpCategory::Contraction:
      CHECK((*rule == FlopRule::MatMul || *rule == FlopRule::Conv2D ||
             *rule == FlopRule::Attention));
      break;
    case ir::OpCategory::DataMovement:
    case ir::OpCategory::Collective: CHECK(*rule == FlopRule::Free); break;
    }
  }
}

TEST_CASE("a kernel's bytes moved are its buffer parameters' sizes", "[cost]") {
  kir::Kernel kernel;
  kernel.name = "k";
  kernel.params.push_back(std::make_shared<kir::Buffer>(kir::Buffer{"in", DType::F16, 17}));
  kernel.params.push_back(std::make_shared<kir::Buffer>(kir::Buffer{"idx", DType::I64, 3}));
  kernel.params.push_back(std::make_shared<kir::Buffer>(kir::Buffer{"out", DType::F32, 5}));
  CHECK(compiler::kernelBytesMoved(kernel) == 17 * 2 + 3 * 8 + 5 * 4);
}

TEST_CASE("compiled plan steps carry their group's FLOPs and their buffers' bytes", "[cost]") {
  // matmul + bias + relu fuse into one contraction kernel; softmax is a second.
  int64_t m = 7, k = 17, n = 13;
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[7,17]
  param %w: f32[17,13]
  param %b: f32[13]
  %0: f32[7,13] = matmul(%x, %w)
  %1: f32[7,13] = add(%0, %b)
  %2: f32[7,13] = relu(%1)
  %y: f32[7,13] = softmax(%2)
  output "y" = %y
})");
  TargetKind target = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  INFO("target " << targetKindName(target));
  CompileOptions options;
  options.target = target;
  auto compiled = compile(*graph, options);
  if (!compiled)
    FAIL(compiled.error().str());
  const runtime::LaunchPlan &plan = compiled->plan();
  // On the CPU the weight w is packed once, by a derived prelude step before the contraction:
  // no FLOPs, and it reads w and writes its packed copy (the other buffers it is passed it
  // leaves alone).
  std::vector<runtime::PlanStep> launches;
  for (const runtime::PlanStep &step : plan.steps) {
    if (!step.derived) {
      launches.push_back(step);
      continue;
    }
    CHECK(target == TargetKind::Cpu);
    CHECK(step.kernelName.ends_with("_pack_b"));
    CHECK(step.flops == 0);
    CHECK(step.bytesMoved >= 2 * k * n * 4);
  }
  CHECK(launches.size() + (target == TargetKind::Cpu ? 1 : 0) == plan.steps.size());
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].flops == 2 * m * n * k + m * n + m * n);
  CHECK(launches[1].flops == 5 * m * n);
  for (const runtime::PlanStep &step : launches) {
    INFO("kernel " << step.kernelName);
    int64_t buffers = 0;
    for (int id : step.args)
      buffers += plan.buffers[static_cast<size_t>(id)].bytes;
    CHECK(step.bytesMoved == buffers);
    CHECK(step.bytesMoved > 0);
  }
  // The contraction reads x, w and b and writes its result, at least.
  CHECK(launches[0].bytesMoved >= (m * k + k * n + n + m * n) * 4);
}

} // namespace
} // namespace kiln::test
