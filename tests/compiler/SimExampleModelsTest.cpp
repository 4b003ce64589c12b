// Every example model compiled for the GPU (sm_80 and sm_90a schedules) and run
// on the SIMT simulator, checked against the fp64 reference at small sizes (its batch a
// size symbol: one compile, batches 1 and 2), plus the simulator target's errors and report.
#include "CompileTestUtil.h"

#include "examples/models/ExampleRegistry.h"
#include "ir/graph/Interpreter.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

TEST_CASE("every example model runs on the simulator and matches the reference",
          "[compiler][sim]") {
  const auto &models = examples::exampleModels();
  REQUIRE(models.size() == 6);
  size_t index = GENERATE(range<size_t>(0, 6));
  std::string arch = GENERATE(as<std::string>{}, "sm_90a", "sm_80");
  const examples::ExampleModel &model = models[index];
  INFO("example " << model.name << " for " << arch);
  // One compile for a batch of 1 or 2 (docs/dynamic-shapes.md), checked against the reference
  // at batch 1 on both architectures, and at 2 on sm_90a but for the two largest models (a
  // run on the simulator costs as many threads as the batch's largest size: they would take
  // minutes more).
  Graph graph(model.name, freshSeed());
  buildTinyExample(model, graph, kiln::dim("N", 1, 2));
  REQUIRE(graph.finalize());
  CompileOptions options;
  options.target = TargetKind::Sim;
  options.gpuArch = arch;
  CompileReport report;
  auto compiled = compile(graph.ir(), options, &report);
  REQUIRE(compiled.has_value());
  CHECK(report.target == fmt::format("sim {} (SIMT simulator)", arch));
  CHECK(report.numKernels > 0);
  NamedTensors params = graph.paramValues();
  REQUIRE(compiled->bindParams(params).has_value());

  uint64_t seed = freshSeed();
  Rng rng(seed);
  bool large = model.name == "resnet" || model.name == "vgg";
  for (int64_t batch :
       arch == "sm_90a" && !large ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{1}) {
    INFO("batch " << batch << ", input seed " << fmt::format("{:#x}", seed));
    NamedTensors inputs;
    for (const ir::Value *input : graph.ir().inputs()) {
      Values values = isInteger(input->type().dtype) ? Values::indices(1000) : Values::normal();
      std::vector<int64_t> shape = input->type().shape;
      shape.at(0) = batch;
      inputs.emplace(input->name(), randomTensor(input->type().dtype, shape, rng, values));
    }
    auto outputs = compiled->run(inputs, RunOptions{.poisonBuffers = true});
    REQUIRE(outputs.has_value());
    NamedTensors all = inputs;
    all.insert(params.begin(), params.end());
    auto expected = ir::interpret(graph.ir(), all);
    REQUIRE(expected.has_value());
    REQUIRE(outputs->size() == expected->size());
    for (const auto &[name, tensor] : *expected)
      CHECK(outputs->at(name).shape() == tensor.shape());
    checkOutputsMatch(graph.ir(), *outputs, *expected);
  }
}

TEST_CASE("the simulator target reports bad architectures and runs twice", "[compiler][sim]") {
  CompileCase c("sim_target");
  Tensor x = c.input("x", {3, 5});
  c.output("y", relu(x + x));
  REQUIRE(c.graph().finalize());

  CompileOptions bad;
  bad.target = TargetKind::Sim;
  bad.gpuArch = "sm_70";
  auto refused = compile(c.graph().ir(), bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message() ==
        "unknown GPU architecture 'sm_70': expected sm_80, sm_86, sm_89, sm_90 or sm_90a");

  CompileOptions sim;
  sim.target = TargetKind::Sim;
  CompiledModel model = compileOrFail(c.graph().ir(), sim);
  NamedTensors tensors = c.tensors();
  auto first = model.run(tensors);
  auto second = model.run(tensors);
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  const HostTensor &y1 = first->at("y");
  const HostTensor &y2 = second->at("y");
  const HostTensor &xs = tensors.at("x");
  for (int64_t i = 0; i < xs.numElements(); ++i) {
    CHECK(y1.getDouble(i) == std::max(0.0, 2 * xs.getDouble(i)));
    CHECK(y2.getDouble(i) == y1.getDouble(i));
  }
}

TEST_CASE("the cuda target without a usable GPU says why and what to do", "[compiler][sim]") {
  CompileCase c("cuda_target");
  Tensor x = c.input("x", {4, 6});
  c.output("y", x * x);
  REQUIRE(c.graph().finalize());
  CompileOptions cuda;
  cuda.target = TargetKind::Cuda;
  auto model = compile(c.graph().ir(), cuda);
  REQUIRE_FALSE(model.has_value());
  CHECK(model.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(model.error().message(), Catch::StartsWith("cannot run on a GPU: "));
  CHECK_THAT(model.error().str(), Catch::Contains("--target sim"));

  // The auto target falls back to the CPU and reports the same reason.
  CompileReport report;
  auto fallback = compile(c.graph().ir(), {}, &report);
  REQUIRE(fallback.has_value());
  CHECK(fallback->device() == nullptr);
  CHECK_THAT(report.fallbackReason, Catch::StartsWith("no usable GPU (") &&
                                        Catch::EndsWith("); running on the CPU"));
}

} // namespace
TEST_CASE("a symbolic model on the simulator checks its sizes and says what it does not take",
          "[compiler][sim][symbolic]") {
  Graph graph("gathered");
  Rng rng(freshSeed());
  Tensor ids = graph.input("ids", {kiln::dim("N", 1, 8), 3}, DType::I64);
  Tensor table = graph.param("table", HostTensor::randomNormal(DType::F32, {10, 4, 4}, rng));
  // [N, 3, 4, 4], the gather fused into each kernel: pooling, pointwise and a row kernel.
  Tensor rows = gather(table, ids, 0);
  graph.output("pooled", maxPool2d(rows));
  graph.output("y", tanh(rows));
  graph.output("p", softmax(rows));
  REQUIRE(graph.finalize());
  CompileOptions options;
  options.target = TargetKind::Sim;
  CompiledModel model = compileOrFail(graph.ir(), options);
  NamedTensors params = graph.paramValues();
  REQUIRE(model.bindParams(params).has_value());
  // The ids past the run's rows are poison (-1, which the gather clamps): none of it may reach
  // the run's rows.
  HostTensor three = randomTensor(DType::I64, {3, 3}, rng, Values::indices(10));
  auto outputs = model.run({{"ids", three}}, RunOptions{.poisonBuffers = true});
  REQUIRE(outputs.has_value());
  NamedTensors all = params;
  all.emplace("ids", three);
  auto expected = ir::interpret(graph.ir(), all);
  REQUIRE(expected.has_value());
  checkOutputsMatch(graph.ir(), *outputs, *expected);

  auto outside = model.run({{"ids", HostTensor(DType::I64, {9, 3})}});
  REQUIRE_FALSE(outside.has_value());
  CHECK_THAT(outside.error().message(),
             Catch::Contains("N in [1, 8]") && Catch::Contains("the actual size 9"));
  CompileOptions recompiling = options;
  recompiling.recompileOutOfRange = true;
  auto refused = compile(graph.ir(), recompiling);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message() ==
        "recompileOutOfRange takes the cpu target so far, not sim (docs/dynamic-shapes.md)");
}

} // namespace kiln::test
