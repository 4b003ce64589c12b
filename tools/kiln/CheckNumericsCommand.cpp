// kiln check-numerics: compiles a model under a precision policy, runs it on
// seeded random inputs and reports, per output, its error against the graph
// evaluated in f64, failing beyond the policy's tolerance.
#include "compiler/CheckNumerics.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::tool {

namespace {

constexpr const char *kCheckNumericsHelp = R"(usage: kiln check-numerics <model> --precision P [options]

Compiles a model under a precision policy, runs it on seeded random inputs,
evaluates the same graph (unchanged by the policy) in f64 with the reference
interpreter on the same inputs and parameters, and prints per output its
largest absolute error, its largest error relative to the output's scale (the
largest |reference value|) and the policy's tolerance (docs/precision.md).

<model> is a graph IR file (.kir), an ONNX model (.onnx; --shape NAME=D0,D1,...
fixes each input dim it leaves open) or example:<name>; the examples are:
{}
options:
{}  --batch N           batch size of an example (default: the example's)
  --seed S            seed of the random inputs and parameters (default 0)
  --params FILE       parameter values from a safetensors file (default: the
                      example's initializers, or seeded random values)
  --tolerance X       judge against X (relative to each output's scale)
                      instead of the policy's tolerance
  --help              print this help and exit
exit status: 0 every output within tolerance, 1 an output beyond it or a
compile/run failure, 2 bad usage
)";

/// --tolerance when given, else the policy's own.
Expected<double> chosenTolerance(const Args &args, const CompileOptions &options) {
  return args.nonNegativeValue("--tolerance", passes::precisionTolerance(options.precision));
}

void printTable(const std::vector<OutputNumerics> &outputs) {
  size_t nameWidth = std::string_view("output").size(), typeWidth = 4;
  for (const OutputNumerics &output : outputs) {
    nameWidth = std::max(nameWidth, output.name.size());
    typeWidth = std::max(typeWidth, output.type.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:>10}  {:>11}  {:>11}  {:>10}  {}\n", "output", nameWidth, "type",
             typeWidth, "scale", "max abs err", "max rel err", "tolerance", "result");
  for (const OutputNumerics &output : outputs)
    fmt::print("{:<{}}  {:<{}}  {:>10.4g}  {:>11.3e}  {:>11.3e}  {:>10.3e}  {}\n", output.name,
               nameWidth, output.type, typeWidth, output.scale, output.maxAbsError,
               output.maxRelError, output.tolerance, output.ok() ? "pass" : "FAIL");
}

} // namespace

int checkNumericsCommand(const std::vector<std::string> &words) {
  std::set<std::string> valued = kTargetFlags;
  valued.insert({"--batch", "--seed", "--params", "--tolerance"});
  valued.insert("--shape");
  auto args = parseCommandArgs("check-numerics", words, valued, {"--help"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kCheckNumericsHelp, exampleListing(), kTargetHelp);
    return kExitOk;
  }
  if (args->positional().size() != 1)
    return usageErrorWithHelp("check-numerics",
                              fmt::format("expected one model, got {}", args->positional().size()));
  if (!args->has("--precision"))
    return usageError("check-numerics", fmt::format("--precision is required (one of {})",
                                                    passes::precisionPolicyList()));
  CompileOptions options;
  auto target = parseTargetOptions(*args, options);
  auto batch = args->intValue("--batch", 0, 1);
  auto seed = args->intValue("--seed", 0, 0);
  Expected<double> tolerance = chosenTolerance(*args, options);
  if (const Error *error = firstError(target, batch, seed, tolerance))
    return usageError("check-numerics", error->message());

  const std::string &spec = args->positional()[0];
  auto shapes = parseShapeFlags(*args);
  if (!shapes)
    return usageError("check-numerics", shapes.error().message());
  if (auto usable = checkModelSpec(spec, *batch, *shapes); !usable)
    return usageError("check-numerics", usable.error().message());
  auto model = loadModel(spec, *batch, static_cast<uint64_t>(*seed), *shapes);
  if (!model)
    return reportError("check-numerics", model.error());
  NamedTensors params = model->params;
  if (auto path = args->value("--params")) {
    auto loaded = loadParamsFile(*path, *model->graph);
    if (!loaded)
      return reportError("check-numerics", loaded.error());
    params = std::move(*loaded);
  }
  auto random = randomInputs(*model->graph, static_cast<uint64_t>(*seed));
  if (!random)
    return reportError("check-numerics", random.error());
  NamedTensors inputs = std::move(*random);

  auto check = checkNumerics(*model->graph, inputs, params, options, *tolerance);
  if (!check)
    return reportError("check-numerics", check.error());
  std::string_view policy = passes::precisionPolicyName(options.precision);
  fmt::print("model:     {} (seed {})\n", spec, *seed);
  fmt::print("target:    {}\n", check->compile.target);
  if (!check->compile.fallbackReason.empty())
    fmt::print("note:      {}\n", check->compile.fallbackReason);
  fmt::print("precision: {}, tolerance {:.3e} of each output's scale{}\n", policy, *tolerance,
             args->has("--tolerance")
                 ? fmt::format(" (--tolerance; the policy's is {:.3e})",
                               passes::precisionTolerance(options.precision))
                 : "");
  fmt::print("reference: the graph evaluated in f64 by the reference interpreter\n\n");
  printTable(check->outputs);

  size_t failed = 0;
  for (const OutputNumerics &output : check->outputs)
    if (!output.ok()) {
      ++failed;
      fmt::print(stderr,
                 "kiln check-numerics: FAIL: output '{}' is beyond the {} tolerance {:.3e}: "
                 "{} elements differ by more than {:.3e} (tolerance x scale {:.4g}); first at "
                 "{}\n",
                 output.name, policy, output.tolerance, output.mismatches,
                 output.tolerance * output.scale, output.scale, output.firstMismatch);
    }
  if (failed != 0) {
    fmt::print("\n{} of {} outputs beyond tolerance\n", failed, check->outputs.size());
    return kExitFailure;
  }
  fmt::print("\nall {} outputs within tolerance\n", check->outputs.size());
  return kExitOk;
}

} // namespace kiln::tool
