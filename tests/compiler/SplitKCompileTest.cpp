// Split-K end to end: a tensor-core matmul whose few output tiles leave SMs idle is split over
// K by the default schedule, and its group becomes two launches (the partial products, then
// their sum with the fused epilogue). On the simulator device: the plan, the results against
// the reference, runs that repeat bit for bit (launch graphs included), the unsplit schedule
// agreeing, the tuner timing both kernels, and a GPU bundle carrying the sum kernel's dims.
#include "CompileTestUtil.h"

#include "compiler/aot/AotBundle.h"
#include "compiler/tuner/Tuner.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "runtime/bundle/BundleFile.h"
#include "runtime/bundle/PlanCodec.h"
#include "runtime/cache/SectionFile.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

CompileOptions simOptions() {
  CompileOptions options;
  options.target = TargetKind::Sim; // sm_90a's figures: 132 SMs
  return options;
}

/// relu(x[24, 4096] @ w[4096, 40] + b) in bf16: two output tiles, 128 K tiles.
struct NarrowDense {
  CompileCase c{"split_k"};
  NarrowDense() {
    Tensor x = c.input("x", {24, 4096}, DType::BF16);
    Tensor w = c.param("w", {4096, 40}, DType::BF16);
    Tensor b = c.param("b", {40}, DType::BF16);
    c.output("y", relu(matmul(x, w) + b));
    REQUIRE(c.graph().finalize());
  }
};

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

/// The steps whose kernel is a split-K sum.
size_t sumSteps(const runtime::LaunchPlan &plan) {
  return size_t(std::count_if(plan.steps.begin(), plan.steps.end(), [](const auto &step) {
    return endsWith(step.kernelName, "_splitk_sum");
  }));
}

/// The contraction group's default GPU schedule with its K split replaced by `splits`.
CompileOptions withSplit(CompileOptions options, int splits) {
  options.chooseSchedule = [splits](const ir::Graph &graph,
                                    const passes::FusionGroup &group) -> std::optional<lower::Schedule> {
    if (group.kind != passes::GroupKind::Contraction)
      return std::nullopt;
    auto target = codegen::gpuTargetNamed("sm_90a");
    REQUIRE(target);
    auto schedule = std::get<lower::GpuMatMulSchedule>(
        lower::defaultGpuContractionSchedule(graph, group, *target));
    schedule.splitK = splits;
    return schedule;
  };
  return options;
}

} // namespace

TEST_CASE("a narrow matmul with a long K runs as split-K on the simulator device",
          "[compiler][split-k]") {
  NarrowDense m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), simOptions());
  const runtime::LaunchPlan &plan = model.plan();
  // The default split it: the group's partial-product kernel, then the sum right after it.
  REQUIRE(sumSteps(plan) == 1);
  auto sum = std::find_if(plan.steps.begin(), plan.steps.end(),
                          [](const auto &step) { return endsWith(step.kernelName, "_splitk_sum"); });
  REQUIRE(sum != plan.steps.begin());
  CHECK(sum->kernelName == std::prev(sum)->kernelName + "_splitk_sum");
  CHECK(sum->args == std::prev(sum)->args);
  CHECK(sum->flops == 0); // the group's flops are counted once, on its first step
  CHECK(plan.arenaBytes > 0); // the partial sums' workspace

  NamedTensors expected = m.c.reference();
  RunOptions poisoned;
  poisoned.poisonBuffers = true;
  auto first = model.run(m.c.tensors(), poisoned);
  REQUIRE(first);
  checkOutputsMatch(m.c.graph().ir(), *first, expected);
  // The sum adds the splits in a fixed order: every run, replayed graphs too, is bit for bit
  // the same.
  RunOptions graphRun = poisoned;
  graphRun.launchGraph = true;
  for (int run = 0; run < 2; ++run) {
    auto again = model.run(m.c.tensors(), graphRun);
    REQUIRE(again);
    const HostTensor &a = first->at("y"), &b = again->at("y");
    REQUIRE(a.byteSize() == b.byteSize());
    CHECK(std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin()));
  }
}

TEST_CASE("split and unsplit schedules of one matmul agree with the reference",
          "[compiler][split-k]") {
  NarrowDense m;
  NamedTensors expected = m.c.reference();
  for (int splits : {1, 3, 8}) {
    INFO("splitK " << splits);
    CompiledModel model = compileOrFail(m.c.graph().ir(), withSplit(simOptions(), splits));
    CHECK(sumSteps(model.plan()) == (splits > 1 ? 1u : 0u));
    auto outputs = model.run(m.c.tensors());
    REQUIRE(outputs);
    checkOutputsMatch(m.c.graph().ir(), *outputs, expected);
  }
  // A split beyond the legal range is refused, naming the rule.
  auto refused = compile(m.c.graph().ir(), withSplit(simOptions(), 17));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Contains("splitK must be 1 to 16"));
}

TEST_CASE("the tuner times a split-K candidate with its sum kernel", "[compiler][split-k]") {
  NarrowDense m;
  tuning::TunerOptions options;
  options.warmupRuns = 1;
  options.timedRuns = 2;
  options.inputSets = 1;
  options.flushBytes = 4096;
  options.maxTrials = 2;
  options.seed = freshSeed();
  auto report = tuning::tuneGraph(m.c.graph().ir(), simOptions(), options);
  REQUIRE(report);
  const tuning::TunedGroup *contraction = nullptr;
  for (const tuning::TunedGroup &group : report->groups)
    if (group.kind == "contraction")
      contraction = &group;
  REQUIRE(contraction);
  INFO(contraction->defaultSchedule);
  CHECK_FALSE(endsWith(contraction->defaultSchedule, "splitk=1"));
  REQUIRE_FALSE(contraction->candidates.empty());
  // The default (split) is checked against the reference like every candidate: only with
  // its sum kernel run after it does it produce the output.
  CHECK(contraction->candidates.front().valid);
  CHECK(contraction->candidates.front().medianSeconds > 0);
}

TEST_CASE("a GPU bundle carries the split-K sum kernel and its launch dims",
          "[compiler][split-k][aot]") {
  NarrowDense m;
  compiler::AotOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArchs = {"sm_90a"};
  options.compile.useKernelCache = false; // never write to the user's cache from a test
  compiler::AotReport report;
  auto bytes = compiler::buildBundle(m.c.graph().ir(), options, &report);
  REQUIRE(bytes);
  auto view = runtime::decodeSectionFile(*bytes, runtime::bundle::kBundleFormat);
  REQUIRE(view);
  const std::string_view *planBytes =
      view->section(runtime::bundle::gpuSectionName("sm_90a", "plan"));
  REQUIRE(planBytes);
  auto stored = runtime::bundle::decodePlan(*planBytes, "plan", /*requireDims=*/true);
  REQUIRE(stored);
  CHECK(stored->plan.steps.size() == static_cast<size_t>(report.numKernels));
  REQUIRE(sumSteps(stored->plan) == 1);
  for (size_t i = 0; i < stored->plan.steps.size(); ++i)
    if (endsWith(stored->plan.steps[i].kernelName, "_splitk_sum")) {
      REQUIRE(stored->stepDims[i]);
      CHECK(stored->stepDims[i]->block[0] == 256);
      // Four consecutive outputs a thread (40 is a multiple of 4).
      CHECK(stored->stepDims[i]->grid[0] == (24 * 40 + 4 * 256 - 1) / (4 * 256));
    }
}

TEST_CASE("the split-K sum kernel reads each layer of partials 16 bytes at a time",
          "[compiler][split-k]") {
  // 512 x 512 over K = 8192: the default splits K; a thread of the sum adds four adjacent
  // outputs, so each layer is one 16-byte load and the bf16 result one 8-byte store.
  Graph graph("split_k_sum_loads", freshSeed());
  Tensor x = graph.input("x", {512, 8192}, DType::BF16);
  Tensor w = graph.input("w", {8192, 512}, DType::BF16);
  graph.output("y", matmul(x, w));
  REQUIRE(graph.finalize());
  CompileOptions options = sm90aPtxOptions();
  auto splits = std::make_shared<int>(0);
  options.chooseSchedule = [splits](const ir::Graph &g, const passes::FusionGroup &group) {
    auto target = codegen::gpuTargetNamed("sm_90a");
    REQUIRE(target);
    lower::Schedule s = lower::defaultGpuContractionSchedule(g, group, *target);
    *splits = std::get<lower::GpuMatMulSchedule>(s).splitK;
    return std::optional<lower::Schedule>(s);
  };
  auto kernels = compileGpuKernels(graph.ir(), options);
  REQUIRE(kernels);
  REQUIRE(*splits > 1);
  const std::string &ptx = kernels->ptx;
  size_t entry = ptx.find(".entry k0_contraction_matmul_splitk_sum(");
  REQUIRE(entry != std::string::npos);
  std::string sum = ptx.substr(entry, ptx.find("\n}", entry) - entry);
  auto count = [&](std::string_view op) {
    size_t found = 0;
    for (size_t at = sum.find(op); at != std::string::npos; at = sum.find(op, at + 1))
      ++found;
    return found;
  };
  INFO(sum);
  CHECK(count("ld.global.nc.v4.f32") == size_t(*splits)); // one per layer of partials
  CHECK(count("ld.global.nc.f32") == 0);
  CHECK(count("st.global.v4.b16") == 1);
}

} // namespace kiln::test
