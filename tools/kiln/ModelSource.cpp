// Loading models for the kiln command.
#include "tools/kiln/ModelSource.h"

#include "examples/models/ExampleRegistry.h"
#include "frontend/onnx/Import.h"
#include "compiler/ParamSetCheck.h"
#include "frontend/io/Safetensors.h"
#include "ir/graph/Parser.h"
#include "support/RegularFile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::tool {

namespace {

// A shape from the user (a --batch, a .kir input) may not fit in memory: an error, not a throw.
Expected<HostTensor> randomTensor(const ir::TensorType &type, Rng &rng, std::string_view what) {
  auto created = HostTensor::create(type.dtype, type.shape);
  if (!created)
    return makeError(created.error().code(),
                     fmt::format("random {} {}: {}", what, type.str(),
                                 created.error().message()));
  HostTensor tensor = std::move(*created);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    double value;
    if (isFloatingPoint(type.dtype))
      value = rng.normal();
    else if (type.dtype == DType::Bool)
      value = static_cast<double>(rng.nextU64() % 2);
    else
      value = static_cast<double>(rng.nextU64() % 10);
    tensor.setDouble(i, value);
  }
  return tensor;
}

} // namespace

Expected<NamedTensors> loadParamsFile(const std::string &path, const ir::Graph &graph) {
  KILN_TRY(NamedTensors params, io::loadSafetensors(path));
  std::vector<ExpectedParam> expected;
  for (const ir::Value *param : graph.params())
    expected.push_back({param->name(), param->type().dtype, param->type().shape});
  KILN_TRY_VOID(checkParamSet(params, expected, fmt::format("--params {}", path), "tensor"));
  return params;
}

Expected<NamedTensors> randomInputs(const ir::Graph &graph, uint64_t seed) {
  Rng rng(seed);
  NamedTensors inputs;
  for (const ir::Value *input : graph.inputs()) {
    KILN_TRY(HostTensor tensor, randomTensor(input->type(), rng, "input " + input->name()));
    inputs.emplace(input->name(), std::move(tensor));
  }
  return inputs;
}

std::string exampleListing() {
  std::string text;
  for (const auto &model : examples::exampleModels())
    text += fmt::format("  example:{:<12} {} (batch {})\n", model.name, model.description,
                        model.defaultBatch);
  return text;
}

namespace {
constexpr std::string_view kExamplePrefix = "example:";
}

Expected<void> checkModelSpec(const std::string &spec, int64_t batch, const InputShapes &shapes) {
  if (spec.ends_with(".onnx")) {
    if (batch > 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--batch applies to examples; give an ONNX model's input "
                                   "shapes with --shape NAME=D0,D1,... ('{}')",
                                   spec));
    return {};
  }
  if (!shapes.empty())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--shape applies to ONNX models, not '{}'", spec));
  if (spec.starts_with(kExamplePrefix)) {
    std::string name = spec.substr(kExamplePrefix.size());
    if (!examples::findExampleModel(name))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("no example called '{}'; the examples are:\n{}", name,
                                   exampleListing()));
    return {};
  }
  if (batch > 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--batch applies to examples only; '{}' has fixed shapes", spec));
  return {};
}

Expected<LoadedModel> loadModel(const std::string &spec, int64_t batch, uint64_t seed,
                                const InputShapes &shapes) {
  KILN_TRY_VOID(checkModelSpec(spec, batch, shapes));
  LoadedModel loaded;
  if (spec.ends_with(".onnx")) {
    onnx::ImportOptions options;
    options.inputShapes = shapes.byInput;
    options.dimRanges = shapes.dimRanges;
    if (shapes.defaultDimRange)
      options.defaultDimRange = *shapes.defaultDimRange;
    KILN_TRY(loaded.dsl, onnx::importModel(spec, options));
    loaded.graph = &loaded.dsl->ir();
    loaded.params = loaded.dsl->paramValues();
    return loaded;
  }
  if (spec.starts_with(kExamplePrefix)) {
    std::string name = spec.substr(kExamplePrefix.size());
    const examples::ExampleModel *model = examples::findExampleModel(name);
    loaded.dsl = std::make_unique<Graph>(name, seed);
    model->build(*loaded.dsl, batch > 0 ? batch : model->defaultBatch);
    KILN_TRY_VOID(loaded.dsl->finalize());
    loaded.graph = &loaded.dsl->ir();
    loaded.params = loaded.dsl->paramValues();
    return loaded;
  }
  KILN_TRY(std::string text, readRegularFile(spec, "IR file", ir::kMaxIrTextBytes));
  KILN_TRY(loaded.owned, ir::parseGraph(text, spec));
  loaded.graph = loaded.owned.get();
  Rng rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (const ir::Value *param : loaded.graph->params()) {
    KILN_TRY(HostTensor tensor, randomTensor(param->type(), rng, "parameter " + param->name()));
    loaded.params.emplace(param->name(), std::move(tensor));
  }
  return loaded;
}

Expected<LoadedModel> loadSymbolicExample(const std::string &spec, int64_t least, int64_t largest,
                                          uint64_t seed) {
  std::string name = spec.substr(std::min(spec.size(), kExamplePrefix.size()));
  const examples::ExampleModel *model =
      spec.starts_with(kExamplePrefix) ? examples::findExampleModel(name) : nullptr;
  if (!model)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("a batch range applies to examples; '{}' is not one", spec));
  LoadedModel loaded;
  loaded.dsl = std::make_unique<Graph>(model->name, seed);
  model->build(*loaded.dsl, kiln::dim("N", least, largest));
  KILN_TRY_VOID(loaded.dsl->finalize());
  loaded.graph = &loaded.dsl->ir();
  loaded.params = loaded.dsl->paramValues();
  return loaded;
}

Error withSymbolicModelNote(Error error, const ir::Graph &model, const std::string &spec) {
  if (!model.isSymbolic() || error.code() != ErrorCode::Unsupported)
    return error;
  std::vector<std::string> symbols;
  for (const ir::SizeSymbol &symbol : model.symbols())
    symbols.push_back(symbol.str());
  std::string fix = spec.ends_with(".onnx")
                        ? "give each open input's shape with --shape NAME=D0,D1,..."
                        : "run it on the CPU (--target cpu)";
  return std::move(error).withNote(fmt::format("the model's size symbols ({}) are the cause: {}",
                                               fmt::join(symbols, ", "), fix));
}

} // namespace kiln::tool
