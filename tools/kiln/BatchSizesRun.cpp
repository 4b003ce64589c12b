// kiln run example:NAME --batch-sizes 1,7,64: one compile with a symbolic batch, N in
// [1, largest], then a run (timed, and checked with --check) at each size
// (docs/dynamic-shapes.md).
#include "compiler/CheckNumerics.h"
#include "examples/models/ExampleRegistry.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Specialize.h"
#include "support/Elapsed.h"
#include "support/Tolerance.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>

namespace kiln::tool {

namespace {

constexpr std::string_view kExamplePrefix = "example:";

/// Compares every output with the reference's, printing one line each; false on a mismatch.
bool checkOutputs(const NamedTensors &outputs, const NamedTensors &expected) {
  bool allOk = true;
  for (const auto &[name, tensor] : outputs) {
    const HostTensor &want = expected.at(name);
    Comparison comparison = compareTensors(tensor, want, toleranceFor(want.dtype()));
    fmt::print("  check {}: {} (max abs error {:.3g}, max rel error {:.3g}){}\n", name,
               comparison.ok ? "ok" : "MISMATCH", comparison.maxAbsError, comparison.maxRelError,
               comparison.ok ? ""
                             : fmt::format("; {} elements differ, first at {}",
                                           comparison.mismatches, comparison.firstMismatchStr));
    allOk = allOk && comparison.ok;
  }
  return allOk;
}

} // namespace

Expected<std::vector<int64_t>> parseBatchSizes(std::string_view text) {
  std::vector<int64_t> sizes;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    int64_t size = 0;
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), size);
    if (error != std::errc() || end != item.data() + item.size() || size < 1)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--batch-sizes takes positive integers separated by commas, "
                                   "got '{}'",
                                   item));
    sizes.push_back(size);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  if (sizes.empty())
    return makeError(ErrorCode::InvalidArgument, "--batch-sizes is empty");
  return sizes;
}

Expected<std::optional<std::vector<int64_t>>>
batchSizesFlag(const Args &args, std::initializer_list<const char *> excluded) {
  auto list = args.value("--batch-sizes");
  if (!list)
    return std::optional<std::vector<int64_t>>();
  for (const char *other : excluded)
    if (args.has(other))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--batch-sizes makes its own inputs at each size: {} does not "
                                   "apply",
                                   other));
  KILN_TRY(std::vector<int64_t> sizes, parseBatchSizes(*list));
  return std::optional<std::vector<int64_t>>(std::move(sizes));
}

Expected<std::optional<std::vector<int64_t>>> parseSizeBuckets(std::string_view text) {
  if (text == "pow2")
    return std::optional<std::vector<int64_t>>();
  if (text == "none")
    return std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  Expected<std::vector<int64_t>> bounds = parseBatchSizes(text);
  if (!bounds)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--size-buckets takes pow2, none or positive integers separated "
                                 "by commas, got '{}'",
                                 text));
  return std::optional<std::vector<int64_t>>(std::move(*bounds));
}

int runBatchSizes(const std::string &spec, const std::vector<int64_t> &sizes,
                  const CompileOptions &options, uint64_t seed, int64_t iterations, bool check,
                  InputShapes shapes) {
  int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  LoadedModel loaded;
  if (spec.starts_with(kExamplePrefix)) {
    auto model = loadSymbolicExample(spec, 1, largest, seed);
    if (!model)
      return model.error().code() == ErrorCode::InvalidArgument
                 ? usageError("run", model.error().message())
                 : reportError("run", model.error());
    loaded = std::move(*model);
  } else {
    // An ONNX model's open dims (dim_params) range over [1, the largest size] unless --shape
    // gives their range; a .kir file declares its symbols.
    shapes.defaultDimRange = ir::SizeInterval{1, largest};
    auto model = loadModel(spec, 0, seed, shapes);
    if (!model)
      return reportError("run", model.error());
    loaded = std::move(*model);
    if (loaded.graph->symbols().size() != 1)
      return usageError("run", fmt::format("--batch-sizes needs a model with one size symbol "
                                           "(an ONNX dim_param, a .kir graph's symbol); '{}' "
                                           "has {}",
                                           spec, loaded.graph->symbols().size()));
  }
  const ir::Graph &graph = *loaded.graph;
  const ir::SizeSymbol &symbol = graph.symbols().front();
  for (int64_t size : sizes)
    if ((size < symbol.min || size > symbol.max) && !options.recompileOutOfRange)
      return usageError("run", fmt::format("batch size {} is outside the model's range, {} "
                                           "(--recompile-out-of-range compiles for it)",
                                           size, symbol.str()));

  // Kernels with runtime sizes run on the CPU: --target auto means the CPU here.
  CompileOptions cpuFirst = options;
  if (cpuFirst.target == TargetKind::Auto)
    cpuFirst.target = TargetKind::Cpu;
  cpuFirst.recompileLog = &std::cout; // the recompiles' lines among the sizes' lines
  CompileReport report;
  auto compiled = compile(graph, cpuFirst, &report);
  if (!compiled)
    return reportError("run", compiled.error());
  fmt::print("target: {}\n", report.target);
  fmt::print("compiled once for {}: {} kernels in {:.3f} s (graph passes {:.3f}, "
             "lowering {:.3f}, codegen {:.3f})\n",
             symbol.str(), report.numKernels, report.totalSeconds, report.graphPassSeconds,
             report.loweringSeconds, report.codegenSeconds);
  if (!report.sizeBuckets.empty())
    fmt::print("size buckets: {}\n", report.sizeBuckets);
  const NamedTensors &params = loaded.params;
  if (auto bound = compiled->bindParams(params); !bound)
    return reportError("run", bound.error());

  bool allOk = true;
  for (int64_t size : sizes) {
    // A size outside the range (recompiled for) is checked on the graph widened to hold it.
    ir::SizeSymbol holding{symbol.name, std::min(symbol.min, size), std::max(symbol.max, size)};
    auto widened = ir::widenSymbols(graph, std::span(&holding, 1));
    if (!widened)
      return reportError("run", widened.error());
    const ir::Graph &reference = **widened;
    auto specialized = ir::specialize(reference, {{symbol.name, size}});
    if (!specialized)
      return reportError("run", specialized.error());
    auto inputs = randomInputs(**specialized, seed + static_cast<uint64_t>(size));
    if (!inputs)
      return reportError("run", inputs.error());
    auto outputs = compiled->run(*inputs);
    if (!outputs)
      return reportError("run", outputs.error());
    std::vector<double> seconds;
    for (int64_t i = 1; i < iterations; ++i) {
      auto start = std::chrono::steady_clock::now();
      auto again = compiled->run(*inputs);
      seconds.push_back(secondsSince(start));
      if (!again)
        return reportError("run", again.error());
    }
    std::sort(seconds.begin(), seconds.end());
    fmt::print("batch {}: {}\n", size,
               seconds.empty() ? std::string("ran once")
                               : fmt::format("{:.3f} ms per run (median of {})",
                                             seconds[seconds.size() / 2] * 1e3, seconds.size()));
    if (!check)
      continue;
    auto expected = ir::interpret(reference, runBindings(*inputs, params));
    if (!expected)
      return reportError("run", expected.error());
    allOk = checkOutputs(*outputs, *expected) && allOk;
  }
  if (size_t recompiles = compiled->sizeRecompiles().size(); recompiles > 0)
    fmt::print("compiled {} more time{} for sizes outside {}\n", recompiles,
               recompiles == 1 ? "" : "s", symbol.str());
  return allOk ? kExitOk : kExitFailure;
}

} // namespace kiln::tool
