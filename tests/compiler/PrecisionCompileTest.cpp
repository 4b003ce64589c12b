// Every example model compiled for the CPU under every precision policy
// matches the graph evaluated in f64 within the policy's tolerance, and the
// compiled graph's contractions are the policy's (so the check cannot pass
// by compiling everything in f32). Small sizes keep the 30 compiles and the
// reference fast.
#include "CompileTestUtil.h"

#include "compiler/CheckNumerics.h"
#include "examples/models/ExampleRegistry.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"

#include <fmt/format.h>

#include <sstream>

namespace kiln::test {
namespace {

constexpr int64_t kLstmVocabulary = 50;

/// Example `name` at a size that compiles and interprets quickly.
void buildSmall(const examples::ExampleModel &model, Graph &graph) {
  if (model.name == "vgg")
    examples::buildVggTransfer(graph, {.batch = 1, .imageSize = 32});
  else if (model.name == "transformer")
    examples::buildTransformerBlock(
        graph, {.batch = 1, .sequenceLength = 9, .modelDim = 32, .numHeads = 2, .mlpDim = 64});
  else if (model.name == "lstm")
    examples::buildLstmLanguageModel(graph, {.batch = 2,
                                             .sequenceLength = 4,
                                             .vocabularySize = kLstmVocabulary,
                                             .embeddingDim = 16,
                                             .units = 16});
  else
    model.build(graph, 2);
}

/// Checks every contraction line of `graphText` (kiln compile --dump=graph)
/// against the policy: narrow result and allow_tf32 only for tf32. Returns
/// how many there are.
int checkContractions(const std::string &graphText, passes::PrecisionPolicy policy) {
  std::optional<DType> narrow = passes::contractionOperandDType(policy);
  std::string resultType = fmt::format(": {}[", dtypeName(narrow.value_or(DType::F32)));
  std::string tf32 = fmt::format("allow_tf32 = {}", policy == passes::PrecisionPolicy::Tf32);
  int contractions = 0;
  std::istringstream lines(graphText);
  for (std::string line; std::getline(lines, line);) {
    bool contraction = line.find(" = matmul(") != std::string::npos ||
                       line.find(" = conv2d(") != std::string::npos;
    if (!contraction)
      continue;
    INFO(line);
    CHECK(line.find(resultType) != std::string::npos);
    CHECK(line.find("accumulate = f32") != std::string::npos);
    CHECK(line.find(tf32) != std::string::npos);
    ++contractions;
  }
  return contractions;
}

TEST_CASE("every example under every precision policy matches the f64 reference",
          "[compiler][precision]") {
  const auto &models = examples::exampleModels();
  REQUIRE(models.size() == 6);
  size_t index = GENERATE(range<size_t>(0, 6));
  passes::PrecisionPolicy policy = GENERATE(from_range(std::begin(passes::kPrecisionPolicies),
                                                       std::end(passes::kPrecisionPolicies)));
  const examples::ExampleModel &model = models[index];
  std::string_view policyName = passes::precisionPolicyName(policy);
  INFO("example " << model.name << ", precision " << policyName);

  Graph graph(model.name, freshSeed());
  buildSmall(model, graph);
  REQUIRE(graph.finalize());
  uint64_t seed = freshSeed();
  Rng rng(seed);
  NamedTensors inputs;
  for (const ir::Value *input : graph.ir().inputs()) {
    Values values =
        isInteger(input->type().dtype) ? Values::indices(kLstmVocabulary) : Values::normal();
    inputs.emplace(input->name(),
                   randomTensor(input->type().dtype, input->type().shape, rng, values));
  }
  INFO(fmt::format("input seed {:#x} (--rng-seed {})", seed, Catch::rngSeed()));

  std::ostringstream dump;
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.precision = policy;
  options.dump = kDumpGraph;
  options.dumpStream = &dump;
  auto check = checkNumerics(graph.ir(), inputs, graph.paramValues(), options,
                             passes::precisionTolerance(policy));
  if (!check)
    FAIL(check.error().str());
  CHECK(dump.str().starts_with(
      fmt::format("// ---- graph after graph passes (precision: {})", policyName)));
  CHECK(checkContractions(dump.str(), policy) > 0);
  REQUIRE(check->outputs.size() == graph.ir().outputs().size());
  for (const OutputNumerics &output : check->outputs) {
    INFO(fmt::format("output {} {}: max error {:.3e} of scale {:.4g} (tolerance {:.3e}){}",
                     output.name, output.type, output.maxRelError, output.scale,
                     output.tolerance,
                     output.ok() ? "" : "; first mismatch " + output.firstMismatch));
    CHECK(output.ok());
  }
}

} // namespace
} // namespace kiln::test
