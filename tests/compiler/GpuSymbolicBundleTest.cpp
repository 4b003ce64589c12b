// A symbolic batch on the GPU path (docs/dynamic-shapes.md): a CUDA bundle of a symbolic
// model holds its symbolic plan. (The examples with a symbolic batch on the simulator:
// SimExampleModelsTest.)
#include "CompileTestUtil.h"

#include "compiler/aot/AotBundle.h"
#include "frontend/nn/Dense.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/PlanCodec.h"
#include "runtime/cache/SectionFile.h"

namespace kiln::test {

TEST_CASE("a CUDA bundle of a symbolic model holds its symbolic plan",
          "[compiler][aot][symbolic]") {
  Graph graph("mlp");
  Tensor x = graph.input("x", {kiln::dim("N", 1, 64), 29});
  graph.output("probabilities",
               softmax(nn::Dense(10)(graph, nn::Dense(37, nn::Activation::Relu)(graph, x))));
  REQUIRE(graph.finalize().has_value());
  compiler::AotOptions aot;
  aot.target = TargetKind::Cuda;
  aot.gpuArchs = {"sm_90a"};
  auto bundle = compiler::buildBundle(graph.ir(), aot);
  REQUIRE(bundle.has_value());
  CHECK(runtime::bundle::checkBundle(*bundle).has_value());
  auto sections = runtime::decodeSectionFile(*bundle, runtime::bundle::kBundleFormat);
  REQUIRE(sections.has_value());
  const std::string_view *plan = sections->section("cuda.sm_90a.plan");
  REQUIRE(plan != nullptr);
  auto decoded = runtime::bundle::decodePlan(*plan, "cuda.sm_90a.plan", /*requireDims=*/true);
  REQUIRE(decoded.has_value());
  // One plan for the whole range: the GPU has no size buckets yet.
  CHECK(decoded->plan.symbols == std::vector<ir::SizeSymbol>{{"N", 1, 64}});
  CHECK(decoded->plan.sizesBuffer >= 0);
  CHECK(sections->section(runtime::bundle::kSizeBucketsSection) == nullptr);
}

} // namespace kiln::test
