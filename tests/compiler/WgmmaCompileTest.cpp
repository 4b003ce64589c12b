// The example models under bf16-mixed on the simulator for sm_90a with every contraction that
// can take warpgroup products forced onto them (the wgmma template is not the default yet):
// dense layers, attention's batched products and nhwc convolutions with their fused epilogues,
// end to end against the fp64 reference within bf16-mixed's tolerance; and again with the
// operands of each GEMM that can arriving by bulk tensor copies from a producer warpgroup; and
// the operand-read probe a failing GPU GEMM test prints (tests/ProductProbe.h), run through a
// compiled tma GEMM, finding every read right.
#include "CompileTestUtil.h"

#include "examples/models/ExampleRegistry.h"

namespace kiln::test {

TEST_CASE("the examples under bf16-mixed on wgmma match the reference", "[compiler][sim][wgmma]") {
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  const bool tma = GENERATE(false, true);
  const examples::ExampleModel &model = models[index];
  INFO("example " << model.name << (tma ? " with bulk tensor copies" : ""));
  Graph graph(model.name, freshSeed());
  buildTinyExample(model, graph);
  REQUIRE(graph.finalize());
  Rng rng(freshSeed());
  NamedTensors inputs;
  for (const ir::Value *input : graph.ir().inputs()) {
    Values values = isInteger(input->type().dtype) ? Values::indices(1000) : Values::normal();
    inputs.emplace(input->name(),
                   randomTensor(input->type().dtype, input->type().shape, rng, values));
  }
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = wgmmaBf16Options(TargetKind::Sim, forced, tma);
  checkPolicyNumerics(graph.ir(), inputs, graph.paramValues(), options);
  CHECK(*forced > 0); // every example has such contractions (cnn 4, vgg 14, transformer 7, ...)
}

TEST_CASE("the operand-read probe of a compiled tma GEMM finds every read right on the simulator",
          "[compiler][sim][wgmma][tma][probe]") {
  const bool transposeB = GENERATE(false, true);
  INFO("transpose_b " << transposeB);
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = wgmmaBf16Options(TargetKind::Sim, forced, /*tma=*/true);
  // Odd M, N past one 64-wide tile, K over three 64-deep tiles with a short last one.
  const int64_t m = 70, n = 72, k = 136;
  testing::ProductRun run = compiledProductRun(m, n, k, transposeB, DType::BF16, options);
  CHECK(*forced == 1);
  testing::ProductReads reads = testing::probeProductReads({m, n, k, m}, run);
  CHECK(testing::ProductReads::wrong(reads.a) == 0);
  CHECK(testing::ProductReads::wrong(reads.b) == 0);
  CHECK(reads.runs == 2 * 4 + 2 * 4); // two shifts of each diagonal, 4 digits of each code
  INFO(testing::describeProductReads(reads));
  CHECK(testing::productVerdict(reads).starts_with("every probed read is right"));
}

} // namespace kiln::test
