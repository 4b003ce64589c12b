// Section (d): what one kernel launch costs, with and without launch graphs.
// A chain of K softmaxes cannot fuse (each is a row kernel of its own), so
// the model is K tiny kernels; the cost per launch is the slope of the run
// time between K = 1 and K = kChain, which cancels the copies every run does.
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"
#include "frontend/Ops.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <chrono>

namespace kiln::bench {

namespace {

constexpr int kChain = 64;
constexpr int64_t kRows = 8, kColumns = 64; // 2 KiB: launch-bound, not memory-bound
constexpr int kRuns = 200, kRunsQuick = 50;

void buildSoftmaxChain(Graph &graph, int length) {
  Tensor x = graph.input("x", {kRows, kColumns});
  for (int i = 0; i < length; ++i)
    x = softmax(x * 4.0, -1); // the scale keeps later softmaxes from flattening to uniform
  graph.output("y", x);
}

/// Median wall-clock milliseconds of run() (inputs up, kernels, outputs down).
Expected<double> wallMs(const CompiledModel &model, const NamedTensors &inputs, bool launchGraph,
                        int runs) {
  RunOptions options{.launchGraph = launchGraph};
  KILN_TRY_VOID(model.run(inputs, options)); // captures the graph, when asked
  std::vector<double> ms;
  for (int run = 0; run < runs; ++run) {
    auto start = std::chrono::steady_clock::now();
    KILN_TRY_VOID(model.run(inputs, options));
    ms.push_back(millisecondsSince(start));
  }
  return median(ms);
}

struct ChainResult {
  int kernels = 0;
  double plainMs = 0, graphMs = 0; ///< median wall time per run
  double kernelMs = 0;             ///< median sum of the kernel events per run
  std::string check;
};

Expected<ChainResult> measureChain(const BenchContext &context, int length) {
  Graph graph(fmt::format("softmax_chain_{}", length));
  buildSoftmaxChain(graph, length);
  KILN_TRY(CompiledModel model, compileGraph(graph, context.compileOptions));
  NamedTensors inputs = randomInputs(graph.ir(), 9);
  ChainResult result;
  result.kernels = static_cast<int>(model.numKernels());
  KILN_TRY(NamedTensors outputs, model.run(inputs, RunOptions{.poisonBuffers = true}));
  result.check = checkAgainstReference(graph.ir(), inputs, outputs);
  if (result.check != "ok")
    return result;
  int runs = context.quick ? kRunsQuick : kRuns;
  KILN_TRY(result.plainMs, wallMs(model, inputs, false, runs));
  KILN_TRY(result.graphMs, wallMs(model, inputs, true, runs));
  // The graph replay must compute what the launches one by one compute.
  KILN_TRY(NamedTensors replayed, model.run(inputs, RunOptions{.launchGraph = true}));
  if (std::string check = checkAgainstReference(graph.ir(), inputs, replayed); check != "ok") {
    result.check = "with launchGraph: " + check;
    return result;
  }
  KILN_TRY(KernelTiming timing, timeKernels(model, inputs, context.quick ? 10 : 50));
  result.kernelMs = timing.medianMs;
  return result;
}

} // namespace

void benchLaunchOverhead(BenchContext &context) {
  if (!context.selected("launch_overhead"))
    return;
  auto one = measureChain(context, 1);
  auto chain = measureChain(context, kChain);
  for (const auto *result : {&one, &chain})
    if (!*result || (*result)->check != "ok") {
      context.report.addFailure(fmt::format(
          "launch overhead: {}", *result ? (*result)->check : (*result).error().message()));
      context.report.addGoal({.name = "launch overhead per kernel (report only)",
                              .target = "—",
                              .measured = "failed (see Failures)"});
      return;
    }
  Table table{
      .title = fmt::format("(d) launch overhead: a chain of {} softmaxes on [{}, {}]", kChain,
                           kRows, kColumns),
      .columns = {"model", "kernels", "run ms", "run ms (launch graph)", "GPU kernel ms"},
      .note = fmt::format(
          "run ms: median wall-clock time of CompiledModel::run ({} runs; inputs up, kernels, "
          "outputs down, synchronized); GPU kernel ms: the sum of the run profile's kernel "
          "events. Per kernel = (run ms of the chain - run ms of one softmax) / (kernels - 1), "
          "which cancels the copies and the fixed cost of a run.",
          context.quick ? kRunsQuick : kRuns)};
  for (const auto *result : {&one, &chain})
    table.rows.push_back({fmt::format("softmax x{}", result == &one ? 1 : kChain),
                          std::to_string((*result)->kernels),
                          fmt::format("{:.4f}", (*result)->plainMs),
                          fmt::format("{:.4f}", (*result)->graphMs),
                          fmt::format("{:.4f}", (*result)->kernelMs)});
  int extra = chain->kernels - one->kernels;
  if (extra <= 0) {
    context.report.addFailure(fmt::format(
        "launch overhead: the chain of {} softmaxes compiled to {} kernels, one softmax to {}: "
        "they fused, so the chain measures nothing",
        kChain, chain->kernels, one->kernels));
    context.report.addTable(std::move(table));
    return;
  }
  double plainUs = (chain->plainMs - one->plainMs) / extra * 1e3;
  double graphUs = (chain->graphMs - one->graphMs) / extra * 1e3;
  double kernelUs = (chain->kernelMs - one->kernelMs) / extra * 1e3;
  table.rows.push_back({"per kernel (us)", "", fmt::format("{:.2f}", plainUs),
                        fmt::format("{:.2f}", graphUs), fmt::format("{:.2f}", kernelUs)});
  context.report.addTable(std::move(table));
  context.report.addGoal(
      {.name = "launch overhead per kernel (report only)",
       .target = "graph < launches",
       .measured = fmt::format("{:.2f} us launched one by one, {:.2f} us from a launch graph "
                               "({:.2f} us of it on the GPU)",
                               plainUs, graphUs, kernelUs),
       .status = graphUs < plainUs ? GoalStatus::Met : GoalStatus::Missed});
}

} // namespace kiln::bench
