// Random inputs with fresh seeds and the compiled-versus-reference check.
#include "CompileTestUtil.h"

#include "compiler/CheckNumerics.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"
#include "passes/graph/PrecisionPolicy.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "ir/graph/Interpreter.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln::test {

std::vector<DType> allDTypes() {
  std::vector<DType> types = kFloatTypes;
  types.insert(types.end(), kIntTypes.begin(), kIntTypes.end());
  types.push_back(DType::Bool);
  return types;
}

std::vector<int64_t> allSizes() {
  std::vector<int64_t> sizes = kOddSizes;
  sizes.insert(sizes.end(), kRoundSizes.begin(), kRoundSizes.end());
  return sizes;
}

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hashName(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ULL; // FNV-1a
  for (char c : name)
    hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return hash;
}

} // namespace

uint64_t freshSeed() {
  static std::string lastTest;
  static uint64_t counter = 0;
  std::string test = Catch::getResultCapture().getCurrentTestName();
  if (test != lastTest) {
    lastTest = test;
    counter = 0;
  }
  return mix(mix(Catch::rngSeed()) ^ hashName(test) ^ mix(++counter));
}

HostTensor randomTensor(DType dtype, const std::vector<int64_t> &shape, Rng &rng, Values values) {
  HostTensor tensor(dtype, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    double value = 0;
    switch (values.kind) {
    case Values::Kind::Default:
      if (isFloatingPoint(dtype))
        value = rng.normal();
      else if (dtype == DType::Bool)
        value = static_cast<double>(rng.nextU64() % 2);
      else
        value = static_cast<double>(static_cast<int64_t>(rng.nextU64() % 17) - 8);
      break;
    case Values::Kind::Positive:
    case Values::Kind::Uniform: value = rng.uniform(values.low, values.high); break;
    case Values::Kind::Indices:
      value = values.low + static_cast<double>(rng.nextU64() %
                                               static_cast<uint64_t>(values.high - values.low));
      break;
    }
    if (isInteger(dtype))
      value = std::trunc(value);
    tensor.setDouble(i, value);
  }
  return tensor;
}

CompiledModel compileOrFail(const ir::Graph &graph, const CompileOptions &options) {
  auto compiled = compile(graph, options);
  if (!compiled)
    FAIL("compile failed: " << compiled.error().str());
  return std::move(*compiled);
}

void checkOutputsMatch(const ir::Graph &graph, const NamedTensors &actual,
                       const NamedTensors &expected) {
  CHECK(actual.size() == expected.size());
  int checked = 0;
  for (const auto &[name, want] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      FAIL_CHECK("output '" << name << "' is missing from the compiled model's results");
      continue;
    }
    const HostTensor &got = it->second;
    Tolerance tolerance = toleranceFor(want.dtype());
    Comparison comparison = compareTensors(got, want, tolerance);
    if (!comparison.ok)
      FAIL_CHECK(fmt::format("graph '{}' output '{}' {}: {} of {} elements differ; first at {}; "
                             "max abs error {:.4g}, max rel error {:.4g} (tolerance rel {:g}, "
                             "abs {:g}){}",
                             graph.name(), name, want.typeStr(), comparison.mismatches,
                             want.numElements(), comparison.firstMismatchStr,
                             comparison.maxAbsError, comparison.maxRelError, tolerance.rel,
                             tolerance.abs,
                             comparison.mismatchPattern.empty()
                                 ? ""
                                 : "; wrong in " + comparison.mismatchPattern));
    ++checked;
  }
  CHECK(checked == static_cast<int>(graph.outputs().size()));
}

NamedTensors checkCompiledMatchesReference(const ir::Graph &graph, NamedTensors inputsAndParams,
                                           const std::string &context,
                                           const CompileOptions &options,
                                           CompileReport *report,
                                           const NamedTensors *expectedOutputs) {
  INFO(context);
  auto compiled = compile(graph, options, report);
  if (!compiled) {
    FAIL_CHECK("compile of graph '" << graph.name() << "' failed: " << compiled.error().str());
    return {};
  }
  auto actual = compiled->run(inputsAndParams, RunOptions{.poisonBuffers = true});
  if (!actual) {
    FAIL_CHECK("run of graph '" << graph.name() << "' failed: " << actual.error().str());
    return {};
  }
  if (expectedOutputs) {
    checkOutputsMatch(graph, *actual, *expectedOutputs);
    return std::move(*actual);
  }
  auto expected = ir::interpret(graph, inputsAndParams);
  if (!expected) {
    FAIL_CHECK("the reference interpreter failed on graph '" << graph.name()
                                                             << "': " << expected.error().str());
    return {};
  }
  checkOutputsMatch(graph, *actual, *expected);
  return std::move(*actual);
}

CompileCase::CompileCase(std::string name) : graph_(name, 0), seed_(freshSeed()), rng_(seed_) {}

Tensor CompileCase::input(const std::string &name, const std::vector<int64_t> &shape, DType dtype,
                          Values values) {
  return input(name, randomTensor(dtype, shape, rng_, values));
}

Tensor CompileCase::input(const std::string &name, HostTensor tensor) {
  Tensor value = graph_.input(name, tensor.shape(), tensor.dtype());
  inputs_.insert_or_assign(name, std::move(tensor));
  return value;
}

Tensor CompileCase::param(const std::string &name, const std::vector<int64_t> &shape, DType dtype,
                          Values values) {
  return graph_.param(name, randomTensor(dtype, shape, rng_, values));
}

NamedTensors CompileCase::tensors() const {
  NamedTensors all = inputs_;
  for (const auto &[name, value] : graph_.paramValues())
    all.insert_or_assign(name, value);
  return all;
}

NamedTensors CompileCase::check(const CompileOptions &options, CompileReport *report,
                                const NamedTensors *expectedOutputs) {
  auto finalized = graph_.finalize();
  if (!finalized)
    FAIL("the DSL graph '" << graph_.name() << "' has an error: " << finalized.error().str());
  return checkCompiledMatchesReference(graph_.ir(), tensors(),
                                       fmt::format("graph '{}', seed {:#x} (--rng-seed {})",
                                                   graph_.name(), seed_, Catch::rngSeed()),
                                       options, report, expectedOutputs);
}

NamedTensors CompileCase::reference() {
  auto finalized = graph_.finalize();
  if (!finalized)
    FAIL("the DSL graph '" << graph_.name() << "' has an error: " << finalized.error().str());
  auto expected = ir::interpret(graph_.ir(), tensors());
  if (!expected)
    FAIL("the reference interpreter failed on graph '" << graph_.name()
                                                       << "': " << expected.error().str());
  return std::move(*expected);
}

int CompileCase::checkAndCountKernels() {
  CompileReport report;
  check({}, &report);
  return report.numKernels - report.numPreludeKernels;
}

std::string shapeTag(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  return fmt::format("{}", fmt::join(shape, "x"));
}

void checkPolicyNumerics(const ir::Graph &graph, const NamedTensors &inputs,
                         const NamedTensors &params, const CompileOptions &options) {
  auto check = checkNumerics(graph, inputs, params, options,
                             passes::precisionTolerance(options.precision));
  if (!check)
    FAIL(check.error().str());
  for (const OutputNumerics &output : check->outputs) {
    INFO(fmt::format("output {}: max error {:.3e} (tolerance {:.3e})", output.name,
                     output.maxRelError, output.tolerance));
    CHECK(output.ok());
  }
}

CompileOptions sm90aPtxOptions(GpuBackend backend) {
  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArch = "sm_90a";
  options.gpuBackend = backend;
  options.useKernelCache = false;
  return options;
}

CompileOptions wgmmaBf16Options(TargetKind target, std::shared_ptr<std::atomic<int>> forced,
                                bool tma) {
  const codegen::GpuTarget sm90a = *codegen::gpuTargetNamed("sm_90a");
  CompileOptions options;
  options.target = target;
  options.gpuArch = "sm_90a";
  options.precision = passes::PrecisionPolicy::Bf16Mixed;
  options.chooseSchedule = [sm90a, forced, tma](const ir::Graph &,
                                                const passes::FusionGroup &group) {
    std::optional<lower::Schedule> schedule = lower::wgmmaContractionSchedule(group, sm90a, tma);
    *forced += schedule.has_value();
    return schedule;
  };
  return options;
}

testing::ProductRun compiledProductRun(int64_t m, int64_t n, int64_t k, bool transposeB,
                                       DType dtype, const CompileOptions &options) {
  Graph graph("probed_gemm", freshSeed());
  Tensor x = graph.input("x", {m, k}, dtype);
  Tensor w = graph.input("w", transposeB ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                         dtype);
  graph.output("y", matmul(x, w, {false, transposeB}));
  REQUIRE(graph.finalize());
  auto model = std::make_shared<CompiledModel>(compileOrFail(graph.ir(), options));
  return [model, m, n, k, transposeB, dtype](const std::vector<double> &a,
                                             const std::vector<double> &b) {
    NamedTensors inputs;
    HostTensor x(dtype, {m, k}), w(dtype, transposeB ? std::vector<int64_t>{n, k}
                                                     : std::vector<int64_t>{k, n});
    for (int64_t e = 0; e < m * k; ++e)
      x.setDouble(e, a[size_t(e)]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        w.setDouble(transposeB ? j * k + p : p * n + j, b[size_t(j * k + p)]);
    inputs.emplace("x", std::move(x));
    inputs.emplace("w", std::move(w));
    auto outputs = model->run(inputs, RunOptions{.poisonBuffers = true});
    if (!outputs)
      FAIL("run of the probed GEMM failed: " << outputs.error().str());
    const HostTensor &y = outputs->at("y");
    std::vector<double> d(size_t(y.numElements()));
    for (size_t e = 0; e < d.size(); ++e)
      d[e] = y.getDouble(int64_t(e));
    return d;
  };
}

void buildTinyExample(const examples::ExampleModel &model, Graph &graph, Dim batch) {
  if (model.name == "vgg") {
    examples::buildVggTransfer(graph, {.batch = batch, .imageSize = 32});
  } else if (model.name == "transformer") {
    examples::buildTransformerBlock(
        graph, {.batch = batch, .sequenceLength = 9, .modelDim = 32, .numHeads = 2, .mlpDim = 64});
  } else {
    model.build(graph, batch);
  }
}

} // namespace kiln::test
