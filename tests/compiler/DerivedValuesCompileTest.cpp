// Derived values through the compiler: a CNN whose chained convolutions run NHWC on the CPU
// transposes its filters and packs them (and its dense head's weight) for the GEMM in kernels
// that read parameters alone; the host plan keeps those in the derived block, and the model
// stays right against the fp64 reference when its weights are bound, bound again, and passed
// with one run.
#include "CompileTestUtil.h"
#include "SmallCnn.h"

#include <set>

namespace kiln::test {
namespace {

/// Fresh random values for every parameter of `graph`.
NamedTensors randomParams(const ir::Graph &graph, Rng &rng) {
  NamedTensors params;
  for (const ir::Value *param : graph.params())
    params.emplace(param->name(), randomTensor(param->type().dtype, param->type().shape, rng));
  return params;
}

/// The model's outputs for `runTensors` against the reference on `referenceTensors`.
void checkRun(const CompiledModel &model, const ir::Graph &graph, const NamedTensors &runTensors,
              const NamedTensors &referenceTensors) {
  auto actual = model.run(runTensors);
  REQUIRE(actual.has_value());
  auto expected = ir::interpret(graph, referenceTensors);
  REQUIRE(expected.has_value());
  checkOutputsMatch(graph, *actual, *expected);
}

NamedTensors merged(NamedTensors a, const NamedTensors &b) {
  for (const auto &[name, tensor] : b)
    a.insert_or_assign(name, tensor);
  return a;
}

} // namespace

TEST_CASE("a host model keeps values derived from its weights and recomputes them on a rebind",
          "[compiler][derived]") {
  Graph graph("derived_cnn");
  buildSmallCnn(graph);
  REQUIRE(graph.finalize());
  const ir::Graph &ir = graph.ir();
  uint64_t seed = freshSeed();
  INFO("seed " << seed);
  Rng rng(seed);

  CompileOptions options;
  options.target = TargetKind::Cpu;
  CompiledModel model = compileOrFail(ir, options);
  const runtime::LaunchPlan &plan = model.plan();
  int derivedSteps = 0, packs = 0;
  for (const runtime::PlanStep &step : plan.steps) {
    if (!step.derived)
      continue;
    ++derivedSteps;
    REQUIRE(step.derivedFrom.size() == 1); // one weight each
    const runtime::PlanBinding &param = plan.params[step.derivedFrom[0]];
    INFO("derived step " << step.kernelName << " reads " << param.name);
    CHECK(plan.buffers[param.buffer].shape.size() >= 2); // a filter or the head's weight
    packs += step.kernelName.ends_with("_pack_b");
  }
  // Each filter transposed to NHWC, then each filter and the head's weight packed.
  CHECK(derivedSteps >= 7);
  CHECK(packs >= 4);
  CHECK(plan.derivedBytes > 0);

  NamedTensors inputs{{"images", randomTensor(DType::F32, {2, 3, 9, 9}, rng)}};
  NamedTensors first = randomParams(ir, rng);
  REQUIRE(model.bindParams(first).has_value());
  checkRun(model, ir, inputs, merged(inputs, first));
  checkRun(model, ir, inputs, merged(inputs, first)); // from the kept block

  NamedTensors second = randomParams(ir, rng);
  REQUIRE(model.bindParams(second).has_value());
  checkRun(model, ir, inputs, merged(inputs, second));

  // One run with its own filter of the third convolution; the next one is back on the bound.
  NamedTensors own;
  for (const auto &[name, tensor] : randomParams(ir, rng))
    if (name.find("c3") != std::string::npos)
      own.emplace(name, tensor);
  REQUIRE_FALSE(own.empty());
  checkRun(model, ir, merged(inputs, own), merged(merged(inputs, second), own));
  checkRun(model, ir, inputs, merged(inputs, second));
}

TEST_CASE("a weight that several GEMMs read the same way is packed once", "[compiler][derived]") {
  // An unrolled recurrence, h = tanh(h @ w + x_t): each step's GEMM packs w for its panels,
  // and every step packs it the same way, so the plan runs one packing and the GEMMs share
  // its workspace (the LSTM's recurrent weight, once a time step forward and backward).
  uint64_t seed = freshSeed();
  INFO("seed " << seed);
  Rng rng(seed);
  Graph graph("recurrence");
  Tensor w = graph.param("w", randomTensor(DType::F32, {72, 72}, rng));
  Tensor h = tanh(matmul(graph.input("x0", {5, 72}), w));
  for (const char *name : {"x1", "x2", "x3"})
    h = tanh(add(matmul(h, w), graph.input(name, {5, 72})));
  graph.output("h", h);
  REQUIRE(graph.finalize());
  const ir::Graph &ir = graph.ir();
  CompileOptions options;
  options.target = TargetKind::Cpu;
  CompiledModel model = compileOrFail(ir, options);
  const runtime::LaunchPlan &plan = model.plan();
  std::vector<int> packSteps;
  std::set<int> workspacesRead;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const runtime::PlanStep &step = plan.steps[i];
    if (step.kernelName.ends_with("_pack_b"))
      packSteps.push_back(static_cast<int>(i));
    else if (step.kernelName.find("contraction") != std::string::npos)
      workspacesRead.insert(step.args.back()); // the packed weight is the last workspace
  }
  REQUIRE(packSteps.size() == 1);
  const runtime::PlanStep &pack = plan.steps[size_t(packSteps[0])];
  CHECK(workspacesRead == std::set<int>{pack.args.back()});
  NamedTensors inputs;
  for (const char *name : {"x0", "x1", "x2", "x3"})
    inputs.emplace(name, randomTensor(DType::F32, {5, 72}, rng));
  NamedTensors params = randomParams(ir, rng);
  REQUIRE(model.bindParams(params).has_value());
  checkRun(model, ir, inputs, merged(inputs, params));
}

TEST_CASE("device plans compute derived values in every run", "[compiler][derived]") {
  Graph graph("derived_cnn_sim");
  buildSmallCnn(graph);
  REQUIRE(graph.finalize());
  CompileOptions options;
  options.target = TargetKind::Sim;
  CompiledModel model = compileOrFail(graph.ir(), options);
  CHECK(model.plan().derivedBytes == 0);
  for (const runtime::PlanStep &step : model.plan().steps)
    CHECK_FALSE(step.derived);
}

} // namespace kiln::test
