// Section (b): memory-bound kernels over [rows, 1024] fp32 — two pointwise
// chains, softmax and layer_norm — held to the measured copy bandwidth.
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"
#include "frontend/Ops.h"
#include "ir/graph/Interpreter.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

namespace kiln::bench {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kColumns = 1024;
/// Sizes from this much traffic up are "large": the goal applies there.
constexpr int64_t kLargeTraffic = 256 * kMiB;
constexpr double kGoal = 0.80;
constexpr int kRuns = 20, kRunsQuick = 5;
constexpr int kSampledRows = 16;

struct RowWorkload {
  const char *name;
  const char *formula;
  /// Builds y = f(x) for x [rows, columns]; parameters come from a fixed
  /// seed, so a graph built at another row count has the same values.
  std::function<void(Graph &, int64_t rows)> build;
};

Tensor vectorParam(Graph &graph, const char *name, double mean) {
  Rng rng(std::hash<std::string_view>{}(name));
  return graph.param(name, HostTensor::randomNormal(DType::F32, {kColumns}, rng, mean, 0.5));
}

const std::vector<RowWorkload> &rowWorkloads() {
  static const std::vector<RowWorkload> workloads = {
      {"pointwise_affine_gelu", "gelu_tanh(x * a + b), a and b [1024]",
       [](Graph &g, int64_t rows) {
         Tensor x = g.input("x", {rows, kColumns});
         Tensor a = vectorParam(g, "a", 1.0), b = vectorParam(g, "b", 0.0);
         g.output("y", gelu(x * a + b, GeluApproximation::Tanh));
       }},
      {"pointwise_chain", "h = relu(1.5x + 0.25); h = h * sigmoid(h); tanh(h) * 0.5 + x",
       [](Graph &g, int64_t rows) {
         Tensor x = g.input("x", {rows, kColumns});
         Tensor h = relu(x * 1.5 + 0.25);
         h = h * sigmoid(h);
         g.output("y", tanh(h) * 0.5 + x);
       }},
      {"softmax", "softmax over the 1024 columns",
       [](Graph &g, int64_t rows) { g.output("y", softmax(g.input("x", {rows, kColumns}), -1)); }},
      {"layer_norm", "layer_norm over the 1024 columns, scale and bias [1024], eps 1e-5",
       [](Graph &g, int64_t rows) {
         Tensor x = g.input("x", {rows, kColumns});
         g.output("y", layerNorm(x, vectorParam(g, "scale", 1.0), vectorParam(g, "bias", 0.0),
                                 -1, 1e-5));
       }},
  };
  return workloads;
}

HostTensor gatherRows(const HostTensor &tensor, const std::vector<int64_t> &rows) {
  HostTensor out(tensor.dtype(), {static_cast<int64_t>(rows.size()), kColumns});
  auto from = tensor.as<float>();
  auto to = out.as<float>();
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(&to[i * kColumns], &from[rows[i] * kColumns], kColumns * sizeof(float));
  return out;
}

/// Checks sampled rows (the first, the last and random ones) of a large run
/// against the reference interpreter run on those rows alone.
std::string checkSampledRows(const RowWorkload &workload, int64_t rows, const HostTensor &x,
                             const HostTensor &y) {
  std::set<int64_t> picked = {0, rows - 1};
  Rng rng(11);
  while (static_cast<int64_t>(picked.size()) < std::min<int64_t>(kSampledRows, rows))
    picked.insert(static_cast<int64_t>(rng.nextU64() % static_cast<uint64_t>(rows)));
  std::vector<int64_t> sample(picked.begin(), picked.end());
  Graph small("sampled_rows");
  workload.build(small, static_cast<int64_t>(sample.size()));
  if (auto ok = small.finalize(); !ok)
    return ok.error().message();
  NamedTensors tensors = small.paramValues();
  tensors.insert_or_assign("x", gatherRows(x, sample));
  auto expected = ir::interpret(small.ir(), tensors);
  if (!expected)
    return fmt::format("the reference failed: {}", expected.error().message());
  const HostTensor &want = expected->at("y");
  Comparison comparison = compareTensors(gatherRows(y, sample), want, toleranceFor(DType::F32));
  if (!comparison.ok)
    return fmt::format("sampled rows differ from the reference (max abs error {:.3g}); first: {}",
                       comparison.maxAbsError, comparison.firstMismatchStr);
  return "ok";
}

struct RowResult {
  KernelTiming timing;
  std::string check;
};

Expected<RowResult> measureRows(const BenchContext &context, const RowWorkload &workload,
                                int64_t rows, bool checkEveryRow) {
  Graph graph(workload.name);
  workload.build(graph, rows);
  KILN_TRY(CompiledModel model, compileGraph(graph, context.compileOptions));
  KILN_TRY_VOID(model.bindParams(graph.paramValues()));
  NamedTensors inputs = randomInputs(graph.ir(), 5);
  // Poisoned once, so an element no kernel writes fails the check.
  KILN_TRY(NamedTensors outputs, model.run(inputs, RunOptions{.poisonBuffers = true}));
  std::string check;
  if (checkEveryRow) {
    NamedTensors all = inputs;
    for (const auto &[name, value] : graph.paramValues())
      all.insert_or_assign(name, value);
    check = checkAgainstReference(graph.ir(), all, outputs);
  } else {
    check = checkSampledRows(workload, rows, inputs.at("x"), outputs.at("y"));
  }
  if (check != "ok")
    return RowResult{{}, check};
  KILN_TRY(KernelTiming timing,
           timeKernels(model, inputs, context.quick ? kRunsQuick : kRuns));
  return RowResult{timing, check};
}

} // namespace

void benchRowKernels(BenchContext &context) {
  std::vector<int64_t> traffic = context.quick
                                     ? std::vector<int64_t>{16 * kMiB, 256 * kMiB}
                                     : std::vector<int64_t>{16 * kMiB, 64 * kMiB, 256 * kMiB,
                                                            1024 * kMiB};
  double copy = context.copyBytesPerSecond;
  Table table{
      .title = "(b) memory-bound kernels vs the copy bandwidth",
      .columns = {"workload", "rows x cols", "traffic", "kernels", "median ms", "min ms", "GB/s",
                  "vs copy", "check"},
      .note = fmt::format(
          "Traffic and GB/s from PlanStep::bytesMoved (each buffer element read or written "
          "once; '*': the plan did not count it, so the inputs, parameters and outputs); time = the run profile's kernel events (device events), median of {} runs "
          "after one untimed run; 'vs copy' = GB/s over section (a)'s best copy bandwidth ({}). "
          "Checked before timing: every element against the reference interpreter at the "
          "smallest size, {} sampled rows (first, last, random) at the others. Goal: >= {:.0f}% "
          "at {} of traffic and more.",
          context.quick ? kRunsQuick : kRuns,
          copy > 0 ? fmt::format("{:.0f} GB/s", copy / 1e9) : std::string("not measured"),
          kSampledRows, kGoal * 100, formatBytes(kLargeTraffic))};
  for (const RowWorkload &workload : rowWorkloads()) {
    if (!context.selected(workload.name))
      continue;
    double worstLarge = -1;
    int largeMeasured = 0;
    bool failed = false;
    for (size_t i = 0; i < traffic.size(); ++i) {
      int64_t rows = traffic[i] / (2 * kColumns * int64_t(sizeof(float)));
      std::string shape = fmt::format("{} x {}", rows, kColumns);
      auto result = measureRows(context, workload, rows, /*checkEveryRow=*/i == 0);
      if (!result || result->check != "ok") {
        std::string why = result ? result->check : result.error().message();
        context.report.addFailure(fmt::format("{} {}: {}", workload.name, shape, why));
        table.rows.push_back({workload.name, shape, formatBytes(traffic[i]), "—", "—", "—", "—",
                              "—", result ? "MISMATCH" : "error"});
        failed = true;
        continue;
      }
      const KernelTiming &t = result->timing;
      // A plan whose steps do not count their bytes (kiln's CPU plans) falls
      // back to its inputs, parameters and outputs, marked with a '*'.
      bool counted = t.bytesMoved > 0;
      int64_t bytes = counted ? t.bytesMoved : t.boundaryBytes;
      double bytesPerSecond = double(bytes) / (t.medianMs * 1e-3);
      double ratio = copy > 0 ? bytesPerSecond / copy : -1;
      if (bytes >= kLargeTraffic && ratio >= 0) {
        worstLarge = largeMeasured == 0 ? ratio : std::min(worstLarge, ratio);
        ++largeMeasured;
      }
      table.rows.push_back({workload.name, shape, formatBytes(bytes) + (counted ? "" : "*"),
                            std::to_string(t.kernels), fmt::format("{:.4f}", t.medianMs),
                            fmt::format("{:.4f}", t.minMs),
                            fmt::format("{:.0f}", bytesPerSecond / 1e9),
                            ratio >= 0 ? fmt::format("{:.0f}%", ratio * 100) : "—", "ok"});
    }
    Goal goal{.name = fmt::format("{} vs copy bandwidth (>= {})", workload.name,
                                  formatBytes(kLargeTraffic)),
              .target = fmt::format(">= {:.0f}%", kGoal * 100)};
    if (largeMeasured == 0) {
      goal.measured = copy > 0 ? (failed ? "failed (see Failures)" : "no large size ran")
                               : "copy bandwidth not measured";
    } else {
      goal.measured = fmt::format("{:.0f}% (worst of {} large sizes)", worstLarge * 100,
                                  largeMeasured);
      goal.status = worstLarge >= kGoal && !failed ? GoalStatus::Met : GoalStatus::Missed;
    }
    context.report.addGoal(std::move(goal));
  }
  context.report.addTable(std::move(table));
}

} // namespace kiln::bench
