// The device executor on the simulator device: staging, launch graphs,
// profiles, bound and overridden parameters, concurrent runs, out-of-memory
// errors and the memory the executor gives back.
#include "CompileTestUtil.h"

#include "compiler/Devices.h"
#include "runtime/DeviceExecutor.h"
#include "runtime/sim/SimDevice.h"

#include <fmt/format.h>

#include <thread>

namespace kiln::test {
namespace {

CompileOptions simOptions() {
  CompileOptions options;
  options.target = TargetKind::Sim;
  options.gpuArch = "sm_80";
  return options;
}

/// y = relu(x @ w + b) followed by a row softmax: a contraction, a pointwise
/// epilogue and a row kernel, so a run has several launches and intermediates.
struct SmallModel {
  CompileCase c{"device-executor"};
  /// With `hiddenOutput`, the matmul's result is an output too (written in
  /// place); without, it is an intermediate in the arena.
  explicit SmallModel(int64_t rows = 5, int64_t inner = 19, int64_t cols = 13,
                      bool hiddenOutput = true) {
    Tensor x = c.input("x", {rows, inner});
    Tensor w = c.param("w", {inner, cols});
    Tensor b = c.param("b", {cols});
    Tensor hidden = relu(matmul(x, w) + b);
    c.output("y", softmax(hidden, -1));
    if (hiddenOutput)
      c.output("h", hidden);
  }
};

/// The reference outputs for `tensors`.
NamedTensors referenceOf(CompileCase &c, const NamedTensors &tensors) {
  auto outputs = ir::interpret(c.graph().ir(), tensors);
  REQUIRE(outputs);
  return *outputs;
}

TEST_CASE("the device executor runs a model on the simulator device", "[compiler][executor]") {
  SmallModel m;
  NamedTensors outputs = m.c.check(simOptions());
  CHECK(outputs.size() == 2);
}

TEST_CASE("launch graphs replay the captured launches", "[compiler][executor]") {
  SmallModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  REQUIRE(model.device() != nullptr);
  auto &sim = static_cast<sim::SimDevice &>(*model.device());
  NamedTensors expected = m.c.reference();

  RunOptions graphRun;
  graphRun.launchGraph = true;
  graphRun.poisonBuffers = true;
  for (int run = 0; run < 3; ++run) {
    auto before = sim.census();
    auto outputs = model.run(m.c.tensors(), graphRun);
    REQUIRE(outputs);
    checkOutputsMatch(m.c.graph().ir(), *outputs, expected);
    auto after = sim.census();
    INFO("run " << run);
    CHECK(after.graphLaunches == before.graphLaunches + 1);
    CHECK(after.kernelLaunches == before.kernelLaunches + static_cast<int64_t>(model.numKernels()));
  }
  // One graph, kept by the run's context, not re-captured per run.
  CHECK(sim.census().graphs >= 1);
  int64_t graphs = sim.census().graphs;

  // New inputs flow through the same graph.
  NamedTensors tensors = m.c.tensors();
  tensors.insert_or_assign("x", randomTensor(DType::F32, {5, 19}, m.c.rng()));
  auto outputs = model.run(tensors, graphRun);
  REQUIRE(outputs);
  checkOutputsMatch(m.c.graph().ir(), *outputs, referenceOf(m.c, tensors));
  CHECK(sim.census().graphs == graphs);

  // Binding the parameters moves where the kernels read them: a graph is
  // captured for the new addresses, and its results follow the bound values.
  // The first graph stays for runs that pass the parameters again.
  REQUIRE(model.bindParams({{"w", tensors.at("w")}, {"b", tensors.at("b")}}));
  auto bound = model.run({{"x", tensors.at("x")}}, graphRun);
  REQUIRE(bound);
  checkOutputsMatch(m.c.graph().ir(), *bound, referenceOf(m.c, tensors));
  CHECK(sim.census().graphs == graphs + 1);
  auto passedAgain = model.run(tensors, graphRun);
  REQUIRE(passedAgain);
  checkOutputsMatch(m.c.graph().ir(), *passedAgain, referenceOf(m.c, tensors));
  CHECK(sim.census().graphs == graphs + 1);
}

TEST_CASE("a profiled device run times every copy and kernel", "[compiler][executor]") {
  SmallModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  runtime::RunProfile profile;
  RunOptions options;
  options.profile = &profile;
  options.launchGraph = true; // ignored while profiling
  REQUIRE(model.run(m.c.tensors(), options));
  CHECK(profile.device.find("simulator") != std::string::npos);
  REQUIRE(profile.events.size() == model.numKernels() + 2);
  CHECK(profile.events.front().category == runtime::ProfileCategory::CopyToDevice);
  CHECK(profile.events.front().bytes == 5 * 19 * 4);
  CHECK(profile.events.back().category == runtime::ProfileCategory::CopyToHost);
  CHECK(profile.events.back().bytes == 2 * 5 * 13 * 4);
  double previousEnd = 0;
  for (size_t i = 1; i + 1 < profile.events.size(); ++i) {
    const runtime::ProfileEvent &event = profile.events[i];
    CHECK(event.category == runtime::ProfileCategory::Kernel);
    CHECK(event.step == static_cast<int>(i - 1));
    CHECK(event.name == model.plan().steps[i - 1].kernelName);
    CHECK(event.durationMs >= 0);
    CHECK(event.startMs >= previousEnd - 1e-9);
    previousEnd = event.startMs + event.durationMs;
  }
  CHECK(profile.totalMs >= previousEnd);
}

TEST_CASE("device models keep bound parameters on the device and take overrides per run",
          "[compiler][executor]") {
  SmallModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  NamedTensors all = m.c.tensors();
  NamedTensors params{{"w", all.at("w")}, {"b", all.at("b")}};
  REQUIRE(model.bindParams(params));
  NamedTensors inputsOnly{{"x", all.at("x")}};
  auto bound = model.run(inputsOnly);
  REQUIRE(bound);
  checkOutputsMatch(m.c.graph().ir(), *bound, referenceOf(m.c, all));

  // An override for one run only, with and without a launch graph.
  HostTensor otherBias = randomTensor(DType::F32, {13}, m.c.rng());
  NamedTensors overridden = inputsOnly;
  overridden.emplace("b", otherBias);
  NamedTensors overriddenAll = all;
  overriddenAll.insert_or_assign("b", otherBias);
  for (bool graph : {false, true}) {
    RunOptions options;
    options.launchGraph = graph;
    auto outputs = model.run(overridden, options);
    REQUIRE(outputs);
    checkOutputsMatch(m.c.graph().ir(), *outputs, referenceOf(m.c, overriddenAll));
    auto again = model.run(inputsOnly, options);
    REQUIRE(again);
    checkOutputsMatch(m.c.graph().ir(), *again, referenceOf(m.c, all));
  }

  // Rebinding after a graph was captured is seen by the graph's next replay.
  RunOptions graphRun;
  graphRun.launchGraph = true;
  REQUIRE(model.bindParams({{"b", otherBias}}));
  auto rebound = model.run(inputsOnly, graphRun);
  REQUIRE(rebound);
  checkOutputsMatch(m.c.graph().ir(), *rebound, referenceOf(m.c, overriddenAll));
}

TEST_CASE("device models run from several threads at once", "[compiler][executor]") {
  SmallModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  constexpr int kThreads = 4;
  std::vector<NamedTensors> tensors(kThreads), expected(kThreads), actual(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    tensors[t] = m.c.tensors();
    tensors[t].insert_or_assign("x", randomTensor(DType::F32, {5, 19}, m.c.rng()));
    expected[t] = referenceOf(m.c, tensors[t]);
  }
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 3; ++run) {
        RunOptions options;
        options.launchGraph = (run % 2) == 1;
        auto outputs = model.run(tensors[t], options);
        if (!outputs) {
          errors[t] = outputs.error().str();
          return;
        }
        actual[t] = std::move(*outputs);
      }
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(errors[t].empty());
    checkOutputsMatch(m.c.graph().ir(), actual[t], expected[t]);
  }
}

TEST_CASE("a model gives its device memory back when it is destroyed", "[compiler][executor]") {
  compiler::DeviceHandle<sim::SimDevice> sim = compiler::simDevice();
  int64_t before = sim.pool->stats().bytesInUse;
  int64_t streamsBefore = sim.device->census().streams;
  {
    SmallModel m;
    CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
    RunOptions options;
    options.launchGraph = true;
    REQUIRE(model.run(m.c.tensors(), options));
    CHECK(sim.pool->stats().bytesInUse > before);
    CHECK(sim.device->census().streams == streamsBefore + 1);
  }
  CHECK(sim.pool->stats().bytesInUse == before);
  CHECK(sim.device->census().streams == streamsBefore);
}

TEST_CASE("out of device memory names the planned arena", "[compiler][executor]") {
  SmallModel m(64, 96, 80, /*hiddenOutput=*/false);
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  const runtime::LaunchPlan &plan = model.plan();
  REQUIRE(plan.arenaBytes > 0);
  // A device with room for the inputs and outputs but not the arena.
  auto small = std::make_shared<sim::SimDevice>(plan.arenaBytes / 2);
  auto pool = std::make_shared<runtime::DeviceMemoryPool>(*small);
  auto executor = runtime::DeviceExecutor::create(plan, small, pool);
  REQUIRE(executor);
  int64_t constantsOnly = pool->stats().bytesInUse;
  NamedTensors all = m.c.tensors();
  std::vector<const HostTensor *> inputs{&all.at("x")};
  std::vector<const HostTensor *> params{&all.at("w"), &all.at("b")};
  if (plan.params[0].name != "w")
    std::swap(params[0], params[1]);
  auto outputs = (*executor)->run(plan, inputs, params, RunOptions{});
  REQUIRE_FALSE(outputs);
  const Error &error = outputs.error();
  CHECK(error.code() == ErrorCode::OutOfMemory);
  std::string text = error.str();
  INFO(text);
  CHECK(text.find("arena") != std::string::npos);
  CHECK(text.find(fmt::format("{:.1f} MiB", static_cast<double>(plan.arenaBytes) / (1 << 20))) !=
        std::string::npos);
  // Nothing the failed run took is kept.
  CHECK(pool->stats().bytesInUse == constantsOnly);
  CHECK(small->census().streams == 0);
}

} // namespace
} // namespace kiln::test
