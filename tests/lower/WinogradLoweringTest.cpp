// Convolutions rewritten by "winograd" and lowered, on every target, against the fp64
// reference of the convolution itself: the transforms' gathers, the batched matmul with a
// broadcast filter and the output transform with the conv's bias and relu fused into it.
#include "LoweringTestUtil.h"
#include "lower/gpu/GpuLoweringTestUtil.h"

#include "passes/PassManager.h"
#include "passes/graph/GraphPasses.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

/// conv2d(x, w) + b, relu, x given in nchw order ([N, C, H, W]) and laid out as `layout`
/// says; then the rewrite and the cleanup a compile runs after it. Returns the reference of
/// the graph before the rewrite.
NamedTensors buildAndRewrite(LoweringCase &c, Ints x, int64_t outChannels, Ints padding,
                             const std::string &layout, passes::WinogradOptions options) {
  bool nhwc = layout == "nhwc";
  const int64_t channels = x[1];
  ir::Value *in = c.input("x", DType::F32, nhwc ? Ints{x[0], x[2], x[3], x[1]} : x);
  ir::Value *w =
      c.input("w", DType::F32,
              nhwc ? Ints{outChannels, 3, 3, channels} : Ints{outChannels, channels, 3, 3});
  ir::Value *b = c.input("b", DType::F32, nhwc ? Ints{outChannels} : Ints{outChannels, 1, 1});
  ir::Value *conv = c.node(OpKind::Conv2D, {in, w}, {{"padding", padding}, {"layout", layout}});
  c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {conv, b})}));
  NamedTensors want = c.reference();
  passes::PassManager pm;
  pm.add(passes::createWinogradPass(options));
  REQUIRE(pm.addPipeline("simplify,fold,cse,dce"));
  auto changed = pm.run(c.graph());
  INFO((changed ? std::string() : changed.error().str()));
  REQUIRE(changed);
  REQUIRE(*changed);
  return want;
}

void compare(const NamedTensors &got, const NamedTensors &want, double toleranceScale) {
  for (const auto &[name, tensor] : want) {
    INFO("output " << name);
    CHECK(compareTensors(got.at(name), tensor, toleranceScale) == "");
  }
}

TEST_CASE("Winograd convolutions lower and match the convolution's reference",
          "[lower][winograd]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  struct Case {
    Ints x;
    int64_t outChannels;
    Ints padding;
  };
  // H and W odd (partial last tiles), channels that fill no vector, batch 1 and 3, with and
  // without padding.
  const Case cases[] = {
      {{3, 5, 9, 7}, 7, {1, 1, 1, 1}},
      {{1, 17, 7, 11}, 19, {0, 0, 0, 0}},
      {{1, 6, 6, 9}, 3, {2, 0, 1, 0}},
  };
  // f32 against the fp64 reference: the f32 tolerance (1e-5 of max(1, |reference|)) times 10
  // for F(2x2, 3x3), times 100 for F(4x4, 3x3), whose transforms amplify rounding more. Both
  // layouts with F(2x2, 3x3), the one the CPU takes; nchw with F(4x4, 3x3) too.
  const std::pair<std::string, int> variants[] = {{"nchw", 2}, {"nchw", 4}, {"nhwc", 2}};
  for (const auto &[layout, tile] : variants)
    for (const Case &k : cases) {
      INFO(layout << " F(" << tile << "x" << tile << ", 3x3), x " << ir::shapeStr(k.x) << ", "
                  << k.outChannels << " outputs, padding " << ir::shapeStr(k.padding));
      LoweringCase c(static_cast<uint64_t>(tile * 10 + k.outChannels));
      NamedTensors want = buildAndRewrite(c, k.x, k.outChannels, k.padding, layout,
                                          passes::WinogradOptions::anySize(tile));
      double scale = tile == 2 ? 10.0 : 100.0;
      INFO("graph:\n" << ir::printGraph(c.graph()));
      for (TestTarget target : testTargets()) {
        INFO("target " << testTargetName(target));
        if (target == TestTarget::Sim) {
          compare(runOnGpu(c), want, scale);
          continue;
        }
        compare(c.lowered(Executor::Evaluator), want, scale);
        compare(c.lowered(Executor::Jit), want, scale);
        compare(c.lowered(Executor::Jit, stressSchedule), want, scale);
      }
    }
}

} // namespace
} // namespace kiln::test
