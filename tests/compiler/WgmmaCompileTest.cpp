// The example models under bf16-mixed on the simulator for sm_90a with every contraction that
// can take warpgroup products forced onto them (the wgmma template is not the default yet):
// dense layers, attention's batched products and nhwc convolutions with their fused epilogues,
// end to end against the fp64 reference within bf16-mixed's tolerance.
#include "CompileTestUtil.h"

#include "examples/models/ExampleRegistry.h"
#include "passes/graph/PrecisionPolicy.h"
#include "passes/lower/gpu/GpuContraction.h"

#include <atomic>

namespace kiln::test {

TEST_CASE("the examples under bf16-mixed on wgmma match the reference", "[compiler][sim][wgmma]") {
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  const examples::ExampleModel &model = models[index];
  INFO("example " << model.name);
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
  const codegen::GpuTarget target = *codegen::gpuTargetNamed("sm_90a");
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options;
  options.target = TargetKind::Sim;
  options.gpuArch = "sm_90a";
  options.precision = passes::PrecisionPolicy::Bf16Mixed;
  options.chooseSchedule = [target, forced](const ir::Graph &, const passes::FusionGroup &group) {
    std::optional<lower::Schedule> schedule = lower::wgmmaContractionSchedule(group, target);
    *forced += schedule.has_value();
    return schedule;
  };
  checkPolicyNumerics(graph.ir(), inputs, graph.paramValues(), options);
  CHECK(*forced > 0); // every example has such contractions (cnn 4, vgg 14, transformer 7, ...)
}

} // namespace kiln::test
