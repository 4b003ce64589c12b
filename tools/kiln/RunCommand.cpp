// kiln run: compiles a model, runs it on given or random inputs, prints the
// outputs and the time per run, optionally profiles it per kernel and checks
// it against the reference.
#include "compiler/CheckNumerics.h"
#include "ir/graph/Interpreter.h"
#include "support/Elapsed.h"
#include "support/Tolerance.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"
#include "tools/kiln/ProfileOutput.h"
#include "tools/kiln/TensorFiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace kiln::tool {

namespace {

constexpr const char *kRunHelp = R"(usage: kiln run <model> [options]

Compiles a model, runs it and prints each output's type and first values and
the median time per run.

<model> is a graph IR file (.kir), an ONNX model (.onnx), example:<name>, or a
bundle written by `kiln aot` (a .kiln file: loaded, not compiled; --seed,
--inputs, --params, --iterations, --output and, for a bundle with a size
symbol, --batch-sizes apply); the examples are:
{}
options:
{}{}  --batch N             batch size of an example (default: the example's)
  --batch-sizes LIST    compile a model once with a symbolic batch, N in
                        [1, the largest of LIST], and run it at each size of
                        LIST (e.g. 1,7,64), timed; with --check, each checked
                        (every example; an ONNX model's open dim
                        (dim_param); a
                        .kir graph with one size symbol; on the CPU, which
                        --target auto then means; docs/dynamic-shapes.md)
  --recompile-out-of-range
                        with --batch-sizes: a size outside the model's range
                        (a .kir graph's or ONNX model's) compiles it again for
                        a range that holds it, saying why, instead of failing
  --size-buckets B      a model with a size symbol: the upper bounds of its
                        size buckets, each compiled with schedules of its own:
                        pow2 (default: the least size, the powers of two, the
                        largest), none (one bucket: the whole range), or a LIST
{}  --inputs FILE         input tensors from a safetensors file, or .npy files:
                        x.npy for a model with one input, a=x.npy,b=y.npy
                        (default: seeded random values: normal floats,
                        integers in [0, 10))
  --params FILE         parameter values from a safetensors file (default: the
                        example's initializers, or seeded random values)
  --seed S              seed for random inputs and parameters (default 0)
  --iterations N        runs to time (default 10); the first is not timed
  --output FILE|DIR/    write the outputs to a safetensors file, or one
                        NAME.npy per output into a directory ('/' in a
                        name becomes '_')
  --profile[=FILE]      time every kernel of the timed runs and print, per
                        kernel, its time, bytes moved and FLOPs (counted
                        from the IR), achieved GB/s and FLOP/s and the
                        fraction of the device's peak (on the CPU: measured
                        bandwidth, ~0.1 s); with =FILE also write a Chrome
                        trace (Perfetto, chrome://tracing) to FILE
  --check               also run the fp64 reference interpreter and compare
                        every output with the per-dtype tolerance (under a
                        --precision other than fp32: with the policy's
                        tolerance, as check-numerics does); a mismatch makes
                        the exit status 1
  --help                print this help and exit
exit status: 0 success, 1 compile/run failure or check mismatch, 2 bad usage
)";

std::string firstValues(const HostTensor &tensor, int64_t count) {
  std::vector<std::string> values;
  for (int64_t i = 0; i < std::min(count, tensor.numElements()); ++i)
    values.push_back(fmt::format("{:.6g}", tensor.getDouble(i)));
  if (tensor.numElements() > count)
    values.push_back("...");
  return fmt::format("{}", fmt::join(values, " "));
}

/// --check under a precision policy: the policy's tolerance against the
/// graph evaluated in f64, the comparison of `kiln check-numerics`.
int checkUnderPolicy(const ir::Graph &graph, const NamedTensors &referenceInputs,
                     const NamedTensors &outputs, passes::PrecisionPolicy policy) {
  auto expected = referenceInF64(graph, referenceInputs);
  if (!expected)
    return reportError("run", expected.error());
  bool allOk = true;
  for (const OutputNumerics &output :
       compareWithReference(outputs, *expected, passes::precisionTolerance(policy))) {
    fmt::print("check {}: {} (max abs error {:.3g}, max error / scale {:.3g}, {} tolerance "
               "{:.3g}){}\n",
               output.name, output.ok() ? "ok" : "MISMATCH", output.maxAbsError,
               output.maxRelError, passes::precisionPolicyName(policy), output.tolerance,
               output.ok() ? "" : fmt::format("; {} elements differ, first at {}",
                                              output.mismatches, output.firstMismatch));
    allOk = allOk && output.ok();
  }
  return allOk ? kExitOk : kExitFailure;
}

} // namespace

int runCommand(const std::vector<std::string> &words) {
  std::set<std::string> valued = kTargetFlags;
  valued.insert(kTuningFlags.begin(), kTuningFlags.end());
  valued.insert({"--batch", "--batch-sizes", "--size-buckets", "--inputs", "--params", "--seed",
                 "--iterations", "--output", "--shape"});
  auto args = parseCommandArgs(
      "run", words, valued,
      {"--check", "--help", "--wgmma", "--tma", "--persistent", "--recompile-out-of-range"},
      {"--profile"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kRunHelp, exampleListing(), kTargetHelp, std::string(kTuningHelp) + kWarpgroupHelp,
               kShapeHelp);
    return kExitOk;
  }
  if (args->positional().size() != 1)
    return usageErrorWithHelp("run",
                              fmt::format("expected one model, got {}", args->positional().size()));
  if (isBundlePath(args->positional()[0]))
    return runBundle(args->positional()[0], *args);
  CompileOptions options;
  auto target = parseTargetOptions(*args, options);
  auto tuning = parseTuningOptions(*args, options);
  auto batch = args->intValue("--batch", 0, 1);
  auto seed = args->intValue("--seed", 0, 0);
  auto iterations = args->intValue("--iterations", 10, 1);
  auto shapes = parseShapeFlags(*args);
  if (const Error *error = firstError(target, shapes, tuning, batch, seed, iterations))
    return usageError("run", error->message());
  if (auto usable = checkModelSpec(args->positional()[0], *batch, *shapes); !usable)
    return usageError("run", usable.error().message());
  if (auto buckets = args->value("--size-buckets")) {
    auto bounds = parseSizeBuckets(*buckets);
    if (!bounds)
      return usageError("run", bounds.error().message());
    options.sizeBuckets = *bounds;
  }
  options.recompileOutOfRange = args->has("--recompile-out-of-range");
  if (options.recompileOutOfRange && !args->has("--batch-sizes"))
    return usageError("run", "--recompile-out-of-range applies with --batch-sizes");
  auto sizes = batchSizesFlag(*args, {"--batch", "--inputs", "--params", "--output", "--profile"});
  if (!sizes)
    return usageError("run", sizes.error().message());
  if (*sizes)
    return runBatchSizes(args->positional()[0], **sizes, options, static_cast<uint64_t>(*seed),
                         *iterations, args->has("--check"), *shapes);

  auto model = loadModel(args->positional()[0], *batch, static_cast<uint64_t>(*seed), *shapes);
  if (!model)
    return reportError("run", model.error());
  auto random = randomInputs(*model->graph, static_cast<uint64_t>(*seed));
  if (!random)
    return reportError("run", random.error());
  NamedTensors tensors = std::move(*random);
  if (model->graph->isSymbolic() && !args->has("--inputs"))
    for (const ir::SizeSymbol &symbol : model->graph->symbols())
      fmt::print("note: {} is a size symbol; the random inputs take its maximum, {} "
                 "(--batch-sizes runs others)\n",
                 symbol.str(), symbol.max);
  if (auto path = args->value("--inputs")) {
    auto loaded = loadInputTensors(*path, *model->graph);
    if (!loaded)
      return reportError("run", loaded.error());
    tensors = std::move(*loaded);
  }
  NamedTensors params = model->params;
  if (auto path = args->value("--params")) {
    auto loaded = loadParamsFile(*path, *model->graph);
    if (!loaded)
      return reportError("run", loaded.error());
    params = std::move(*loaded);
  }

  CompileReport report;
  auto compiled = compile(*model->graph, options, &report);
  if (!compiled)
    return reportError(
        "run", withSymbolicModelNote(compiled.error(), *model->graph, args->positional()[0]));
  fmt::print("target: {}\n", report.target);
  if (!report.fallbackReason.empty())
    fmt::print("note:   {}\n", report.fallbackReason);
  fmt::print("compiled {} kernels in {:.3f} s\n", report.numKernels, report.totalSeconds);
  printTuningReport(report, "tuning: ");
  for (const std::string &warning : report.warnings)
    fmt::print(stderr, "kiln run: warning: {}\n", warning);
  if (auto bound = compiled->bindParams(params); !bound)
    return reportError("run", bound.error());

  // Profiling records the timed runs; with one iteration, the only run.
  bool profiling = args->has("--profile");
  std::vector<runtime::RunProfile> profiles(profiling ? std::max<int64_t>(*iterations - 1, 1) : 0);
  RunOptions firstRun;
  if (profiling && *iterations == 1)
    firstRun.profile = &profiles[0];
  Expected<NamedTensors> outputs = compiled->run(tensors, firstRun);
  if (!outputs)
    return reportError("run", outputs.error());
  std::vector<double> seconds;
  for (int64_t i = 1; i < *iterations; ++i) {
    RunOptions timedRun;
    if (profiling)
      timedRun.profile = &profiles[static_cast<size_t>(i - 1)];
    auto start = std::chrono::steady_clock::now();
    auto again = compiled->run(tensors, timedRun);
    seconds.push_back(secondsSince(start));
    if (!again)
      return reportError("run", again.error());
  }
  for (const auto &[name, tensor] : *outputs)
    fmt::print("output {}: {} = {}\n", name, tensor.typeStr(), firstValues(tensor, 8));
  if (!seconds.empty()) {
    std::sort(seconds.begin(), seconds.end());
    fmt::print("time per run: {:.3f} ms (median of {})\n", seconds[seconds.size() / 2] * 1e3,
               seconds.size());
  }
  if (profiling) {
    std::optional<std::string> tracePath;
    if (std::string path = *args->value("--profile"); !path.empty())
      tracePath = path;
    int status = reportProfile(*compiled, std::move(profiles), report.target, tracePath);
    if (status != kExitOk)
      return status;
  }

  if (auto path = args->value("--output"))
    if (auto saved = saveOutputTensors(*path, *outputs); !saved)
      return reportError("run", saved.error());

  if (args->has("--check")) {
    NamedTensors referenceInputs = runBindings(tensors, params);
    if (options.precision != passes::PrecisionPolicy::Fp32)
      return checkUnderPolicy(*model->graph, referenceInputs, *outputs, options.precision);
    auto expected = ir::interpret(*model->graph, referenceInputs);
    if (!expected)
      return reportError("run", expected.error());
    bool allOk = true;
    for (const auto &[name, tensor] : *outputs) {
      const HostTensor &want = expected->at(name);
      Comparison comparison = compareTensors(tensor, want, toleranceFor(want.dtype()));
      fmt::print("check {}: {} (max abs error {:.3g}, max rel error {:.3g}){}\n", name,
                 comparison.ok ? "ok" : "MISMATCH", comparison.maxAbsError,
                 comparison.maxRelError,
                 comparison.ok ? "" : fmt::format("; {} elements differ, first at {}{}",
                                                  comparison.mismatches,
                                                  comparison.firstMismatchStr,
                                                  comparison.mismatchPattern.empty()
                                                      ? ""
                                                      : "; in " + comparison.mismatchPattern));
      allOk = allOk && comparison.ok;
    }
    if (!allOk)
      return kExitFailure;
  }
  return kExitOk;
}

} // namespace kiln::tool
