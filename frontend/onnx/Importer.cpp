// The ONNX import driver: walks the (topologically sorted) nodes once, converting each with
// its registry row. Values known at import (constants, shapes, integer initializers, and
// whatever is computed from only those) fold: their node is converted into a scratch graph
// and evaluated by the reference interpreter, so one converter serves both paths. A node
// that cannot be converted is recorded and the walk goes on, so one error lists them all.
#include "frontend/onnx/Import.h"

#include "frontend/Evaluate.h"
#include "frontend/Ops.h"
#include "frontend/onnx/ConverterRegistry.h"
#include "frontend/onnx/ModelProtoLoading.h"
#include "frontend/onnx/SymbolicShapes.h"
#include "frontend/onnx/TensorProtoReading.h"
#include "ir/graph/Identifier.h"
#include "support/RegularFile.h"

#include <fmt/format.h>

#include <climits>
#include <filesystem>
#include <map>
#include <set>

namespace kiln::onnx {

namespace {

// Folded values larger than this are computed at run time instead: a folded value becomes a
// literal in the graph.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

struct ImportedValue {
  std::optional<HostTensor> value; ///< known at import
  std::optional<SizeVector> sizes; ///< known at import as sizes, some symbolic
  bool foldable = false;           ///< a value to compute with at import (not a weight)
  bool isWeight = false;           ///< a floating-point initializer: a graph parameter
  Tensor tensor;                   ///< in the model's graph, once there
  bool failed = false;             ///< its node could not be converted
};

class ModelImporter {
public:
  ModelImporter(const ::onnx::ModelProto &model, const ImportOptions &options,
                std::string displayName)
      : model_(model), options_(options), displayName_(std::move(displayName)) {}

  Expected<std::unique_ptr<Graph>> run();

private:
  void collectOnnxTypes();
  Expected<void> addInitializers();
  Expected<void> addInputs();
  /// An input's dim: its size, or its dim_param as a size symbol with its range.
  Expected<Dim> inputDim(const ::onnx::TensorShapeProto_Dimension &dim) const;
  void convertNode(const ::onnx::NodeProto &proto, size_t index);
  void foldNode(const ::onnx::NodeProto &proto, const Converter &converter, bool &folded);
  /// A node of shape arithmetic on symbolic sizes (SymbolicShapes.h), computed at import.
  void foldSizes(const ::onnx::NodeProto &proto);
  /// Whether `proto` computes on symbolic sizes: an input known as such, or the Shape (or
  /// Size) of a tensor with symbolic dims.
  bool readsSymbolicSizes(const ::onnx::NodeProto &proto) const;
  /// The node's inputs as convertIntoModel and foldSizes give them: known values and sizes,
  /// and the tensor of each in the model's graph, made when asked for.
  std::vector<NodeInput> modelInputs(const ::onnx::NodeProto &proto);
  void dryRun(const ::onnx::NodeProto &proto, const Converter &converter);
  void convertIntoModel(const ::onnx::NodeProto &proto, const Converter &converter);
  Expected<void> addOutputs();
  Expected<Tensor> materialize(const std::string &name);
  std::string uniqueKilnName(std::string_view onnxName);
  void markFailed(const ::onnx::NodeProto &proto);
  void problem(std::string text) { problems_.push_back(std::move(text)); }

  const ::onnx::ModelProto &model_;
  const ImportOptions &options_;
  std::string displayName_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, ImportedValue, std::less<>> values_;
  /// Static types onnx's shape inference found, by value name.
  std::map<std::string, ir::TensorType, std::less<>> onnxTypes_;
  std::set<std::string, std::less<>> usedKilnNames_;
  std::vector<std::string> problems_;
};

// An input known at import, as a `constant` of the scratch graph a node is converted into.
NodeInput constantInput(const std::string &name, const HostTensor *value, Graph &scratch) {
  NodeInput input;
  input.name = name;
  input.value = value;
  input.tensor = [&scratch, value]() -> Expected<Tensor> { return constant(scratch, *value); };
  return input;
}

std::optional<ir::TensorType> staticType(const ::onnx::TypeProto &type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return std::nullopt;
  std::optional<DType> dtype = dtypeFromOnnx(type.tensor_type().elem_type());
  if (!dtype)
    return std::nullopt;
  Shape shape;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return ir::TensorType{*dtype, shape};
}

void ModelImporter::collectOnnxTypes() {
  const auto &graph = model_.graph();
  for (const auto *list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const auto &info : *list)
      if (auto type = staticType(info.type()))
        onnxTypes_.insert_or_assign(info.name(), *type);
}

std::string ModelImporter::uniqueKilnName(std::string_view onnxName) {
  std::string base = kilnName(onnxName);
  std::string name = base;
  for (int suffix = 1; usedKilnNames_.contains(name); ++suffix)
    name = fmt::format("{}_{}", base, suffix);
  usedKilnNames_.insert(name);
  return name;
}

// Weights (floating-point initializers) become parameters when first used; integer and
// bool initializers are shapes, axes and indices, and fold like constants.
Expected<void> ModelImporter::addInitializers() {
  for (const auto &initializer : model_.graph().initializer()) {
    auto value = tensorFromProto(initializer, initializer.name());
    if (!value)
      return makeError(value.error().code(), fmt::format("ONNX model '{}': initializer {}",
                                                         displayName_, value.error().message()));
    ImportedValue imported;
    imported.isWeight = isFloatingPoint(value->dtype());
    imported.foldable = !imported.isWeight;
    imported.value = std::move(*value);
    values_.insert_or_assign(initializer.name(), std::move(imported));
  }
  return {};
}

Expected<Dim> ModelImporter::inputDim(const ::onnx::TensorShapeProto_Dimension &dim) const {
  if (dim.has_dim_value())
    return Dim(dim.dim_value());
  // fixInputShapes left only named dims open: each name is a size symbol.
  auto range = options_.dimRanges.find(dim.dim_param());
  ir::SizeInterval interval =
      range == options_.dimRanges.end() ? options_.defaultDimRange : range->second;
  std::string name = kilnName(dim.dim_param());
  std::ranges::replace(name, '.', '_'); // a symbol is an identifier
  if (interval.low < 0 || interval.low > interval.high)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("ONNX model '{}': dim '{}' has the empty range [{}, {}]",
                                 displayName_, dim.dim_param(), interval.low, interval.high));
  return Dim::symbol(std::move(name), interval.low, interval.high);
}

Expected<void> ModelImporter::addInputs() {
  for (const auto &input : model_.graph().input()) {
    if (values_.contains(input.name()))
      continue; // an initializer listed as an input (IR version < 4)
    const auto &tensorType = input.type().tensor_type();
    std::optional<DType> dtype = dtypeFromOnnx(tensorType.elem_type());
    if (!dtype)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("ONNX model '{}': input '{}' has element type {}, which kiln "
                                   "does not support",
                                   displayName_, input.name(),
                                   onnxTypeName(tensorType.elem_type())));
    std::vector<Dim> dims;
    for (const auto &dim : tensorType.shape().dim()) {
      KILN_TRY(Dim size, inputDim(dim));
      dims.push_back(std::move(size));
    }
    ImportedValue imported;
    imported.tensor =
        graph_->input(uniqueKilnName(input.name()), ShapeSpec(std::move(dims)), *dtype);
    values_.insert_or_assign(input.name(), std::move(imported));
  }
  return {};
}

Expected<Tensor> ModelImporter::materialize(const std::string &name) {
  auto it = values_.find(name);
  if (it == values_.end())
    return makeError(ErrorCode::FormatError,
                     fmt::format("ONNX model '{}': value '{}' is used before it is defined",
                                 displayName_, name));
  ImportedValue &value = it->second;
  if (!value.tensor.empty())
    return value.tensor;
  if (value.sizes) {
    value.tensor = sizesTensor(*graph_, *value.sizes);
    return value.tensor;
  }
  KILN_CHECK(value.value.has_value(), "an imported ONNX value has neither tensor nor value");
  if (value.isWeight)
    value.tensor = graph_->param(uniqueKilnName(name), *value.value, options_.trainableParams);
  else
    value.tensor = constant(*graph_, *value.value);
  return value.tensor;
}

void ModelImporter::markFailed(const ::onnx::NodeProto &proto) {
  for (const auto &output : proto.output()) {
    if (output.empty())
      continue;
    ImportedValue failed;
    failed.failed = true;
    values_.insert_or_assign(output, std::move(failed));
  }
}

// Converts a node whose inputs are all known at import into a scratch graph and evaluates
// it. `folded` is false when the results are too large to keep as literals.
void ModelImporter::foldNode(const ::onnx::NodeProto &proto, const Converter &converter,
                             bool &folded) {
  folded = false;
  Graph scratch("fold");
  std::vector<NodeInput> inputs;
  for (const auto &name : proto.input()) {
    inputs.push_back(name.empty() ? NodeInput{}
                                  : constantInput(name, &*values_.at(name).value, scratch));
  }
  OnnxNode node(proto, scratch, std::move(inputs));
  if (auto converted = converter.convert(node); !converted) {
    problem(converted.error().message());
    markFailed(proto);
    folded = true;
    return;
  }
  auto &outputs = node.outputs();
  bool anyTensor = false;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (node.hasOutput(i) && outputs[i].tensor.ok()) {
      if (outputs[i].tensor.numElements() > kMaxFoldedElements)
        return; // computed at run time instead
      scratch.output(fmt::format("out{}", i), outputs[i].tensor);
      anyTensor = true;
    }
  NamedTensors results;
  if (anyTensor || scratch.hasError()) {
    auto evaluated = evaluate(scratch, {});
    if (!evaluated) {
      problem(fmt::format("{}: {}", node.describe(), evaluated.error().message()));
      markFailed(proto);
      folded = true;
      return;
    }
    results = std::move(*evaluated);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!node.hasOutput(i))
      continue;
    ImportedValue value;
    value.foldable = true;
    if (outputs[i].value)
      value.value = std::move(outputs[i].value);
    else if (auto result = results.find(fmt::format("out{}", i)); result != results.end())
      value.value = std::move(result->second);
    else
      KILN_UNREACHABLE(fmt::format("ONNX converter for {} left output {} unset",
                                   proto.op_type(), i));
    values_.insert_or_assign(proto.output(static_cast<int>(i)), std::move(value));
  }
  folded = true;
}

// A node downstream of one that failed: converted against placeholders of the types onnx
// inferred, only to report what else in it kiln does not support.
void ModelImporter::dryRun(const ::onnx::NodeProto &proto, const Converter &converter) {
  markFailed(proto);
  Graph scratch("dry_run");
  std::vector<NodeInput> inputs;
  for (const auto &name : proto.input()) {
    NodeInput input;
    input.name = name;
    if (!name.empty()) {
      const ImportedValue &known = values_.at(name);
      if (known.value && !known.failed) {
        input = constantInput(name, &*known.value, scratch);
      } else {
        input.upstreamFailed = known.failed;
        auto type = onnxTypes_.find(name);
        if (type == onnxTypes_.end())
          return; // nothing to try it on
        input.tensor = [&scratch, &name, type = type->second]() -> Expected<Tensor> {
          return scratch.input(kilnName(name), type.shape, type.dtype);
        };
      }
    }
    inputs.push_back(std::move(input));
  }
  OnnxNode node(proto, scratch, std::move(inputs));
  if (auto converted = converter.convert(node);
      !converted && converted.error().code() == ErrorCode::Unsupported)
    problem(converted.error().message());
}

std::vector<NodeInput> ModelImporter::modelInputs(const ::onnx::NodeProto &proto) {
  std::vector<NodeInput> inputs;
  for (const auto &name : proto.input()) {
    NodeInput input;
    input.name = name;
    if (!name.empty()) {
      const ImportedValue &known = values_.at(name);
      input.value = known.value ? &*known.value : nullptr;
      input.sizes = known.sizes ? &*known.sizes : nullptr;
      input.tensor = [this, name]() { return materialize(name); };
    }
    inputs.push_back(std::move(input));
  }
  return inputs;
}

bool ModelImporter::readsSymbolicSizes(const ::onnx::NodeProto &proto) const {
  if (!foldsSymbolicSizes(proto.op_type()))
    return false;
  bool shapeOfTensor = proto.op_type() == "Shape" || proto.op_type() == "Size";
  bool symbolic = false, allKnown = true;
  for (const auto &name : proto.input()) {
    if (name.empty())
      continue;
    const ImportedValue &known = values_.at(name);
    bool symbolicShape = shapeOfTensor && !known.tensor.empty() && known.tensor.type().isSymbolic();
    symbolic = symbolic || known.sizes || symbolicShape;
    allKnown = allKnown && (known.sizes || known.value || symbolicShape);
  }
  // Sizes meeting a value computed at run time (a shape added to a tensor) are converted
  // into the model instead, the sizes made a tensor (materialize).
  return symbolic && allKnown;
}

void ModelImporter::foldSizes(const ::onnx::NodeProto &proto) {
  OnnxNode node(proto, *graph_, modelInputs(proto));
  Expected<SizeVector> sizes = foldSymbolicSizes(node);
  if (!sizes) {
    problem(sizes.error().message()); // OnnxNode's errors name the node
    markFailed(proto);
    return;
  }
  ImportedValue value;
  if (isSymbolic(*sizes)) {
    value.sizes = std::move(*sizes);
  } else {
    // Static after all (the channels of a symbolic shape): an ordinary value from here.
    std::vector<int64_t> ints;
    for (const ir::SizeExpr &size : sizes->sizes)
      ints.push_back(size.constant());
    HostTensor tensor(DType::I64,
                      sizes->scalar ? Shape{} : Shape{static_cast<int64_t>(ints.size())});
    std::copy(ints.begin(), ints.end(), tensor.as<int64_t>().begin());
    value.value = std::move(tensor);
    value.foldable = true;
  }
  for (int i = 1; i < proto.output_size(); ++i)
    if (!proto.output(i).empty()) {
      problem(
          fmt::format("{}: only its first output is computed on symbolic sizes", node.describe()));
      markFailed(proto);
      return;
    }
  values_.insert_or_assign(proto.output(0), std::move(value));
}

void ModelImporter::convertIntoModel(const ::onnx::NodeProto &proto, const Converter &converter) {
  OnnxNode node(proto, *graph_, modelInputs(proto));
  size_t errorsBefore = graph_->errorCount();
  auto converted = converter.convert(node);
  if (!converted) {
    problem(converted.error().message());
    markFailed(proto);
    return;
  }
  if (graph_->errorCount() != errorsBefore) {
    problem(fmt::format("{}: {}", node.describe(),
                        errorsBefore == 0 ? graph_->error()->str()
                                          : std::string("kiln rejects its operands")));
    markFailed(proto);
    return;
  }
  auto &outputs = node.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!node.hasOutput(i))
      continue;
    const std::string &name = proto.output(static_cast<int>(i));
    ImportedValue value;
    if (outputs[i].value) {
      value.value = std::move(outputs[i].value);
      value.foldable = true;
    } else {
      KILN_CHECK(outputs[i].tensor.ok(),
                 fmt::format("ONNX converter for {} left output {} unset", proto.op_type(), i));
      value.tensor = outputs[i].tensor;
      // onnx's shape inference and kiln's must agree: a difference is a converter bug.
      if (auto expected = onnxTypes_.find(name);
          expected != onnxTypes_.end() && expected->second != value.tensor.type()) {
        problem(fmt::format("{}: output '{}' is {} in kiln but {} in onnx's shape inference",
                            node.describe(), name, value.tensor.str(), expected->second.str()));
        markFailed(proto);
        return;
      }
    }
    values_.insert_or_assign(name, std::move(value));
  }
}

void ModelImporter::convertNode(const ::onnx::NodeProto &proto, size_t index) {
  const Converter *converter = findConverter(proto.domain(), proto.op_type());
  if (!converter) {
    bool isDefault = proto.domain().empty() || proto.domain() == "ai.onnx";
    int64_t opset = isDefault ? kTargetOpset : 0;
    for (const auto &import : model_.opset_import())
      if (!isDefault && import.domain() == proto.domain())
        opset = import.version();
    problem(fmt::format("{} '{}' (node {}, domain '{}', opset {}): kiln has no converter for it",
                        proto.op_type(), proto.name(), index,
                        isDefault ? "ai.onnx" : proto.domain(), opset));
    markFailed(proto);
    return;
  }
  bool anyFailed = false, allFoldable = true;
  for (const auto &name : proto.input()) {
    if (name.empty())
      continue;
    auto it = values_.find(name);
    if (it == values_.end()) {
      problem(fmt::format("{} '{}': input '{}' is not defined before it", proto.op_type(),
                          proto.name(), name));
      markFailed(proto);
      return;
    }
    anyFailed = anyFailed || it->second.failed;
    allFoldable = allFoldable && it->second.foldable;
  }
  if (anyFailed)
    return dryRun(proto, *converter);
  if (readsSymbolicSizes(proto))
    return foldSizes(proto);
  if (allFoldable) {
    bool folded = false;
    foldNode(proto, *converter, folded);
    if (folded)
      return;
  }
  convertIntoModel(proto, *converter);
}

Expected<void> ModelImporter::addOutputs() {
  for (const auto &output : model_.graph().output()) {
    auto it = values_.find(output.name());
    if (it == values_.end())
      return makeError(ErrorCode::FormatError,
                       fmt::format("ONNX model '{}': output '{}' is not computed by any node",
                                   displayName_, output.name()));
    if (it->second.failed)
      continue;
    KILN_TRY(Tensor value, materialize(output.name()));
    graph_->output(uniqueKilnName(output.name()), value);
  }
  return {};
}

Expected<std::unique_ptr<Graph>> ModelImporter::run() {
  std::string name = options_.graphName;
  if (name.empty())
    name = model_.graph().name().empty() ? "main" : kilnName(model_.graph().name());
  graph_ = std::make_unique<Graph>(name);
  collectOnnxTypes();
  KILN_TRY_VOID(addInitializers());
  KILN_TRY_VOID(addInputs());
  size_t index = 0;
  for (const auto &node : model_.graph().node())
    convertNode(node, index++);
  if (problems_.empty())
    KILN_TRY_VOID(addOutputs());
  if (!problems_.empty()) {
    Error error(ErrorCode::Unsupported,
                fmt::format("ONNX model '{}': {} node{} cannot be imported", displayName_,
                            problems_.size(), problems_.size() == 1 ? "" : "s"));
    for (auto &text : problems_)
      error.withNote(std::move(text));
    return std::unexpected(std::move(error));
  }
  if (auto finalized = graph_->finalize(); !finalized)
    return makeError(finalized.error().code(),
                     fmt::format("ONNX model '{}': {}", displayName_, finalized.error().str()));
  return std::move(graph_);
}

} // namespace

std::string kilnName(std::string_view onnxName) {
  std::string name;
  for (char c : onnxName)
    name += ir::isIdentifierChar(c) ? c : '_';
  if (name.empty() || !ir::isIdentifierStart(name[0]))
    name.insert(name.begin(), '_');
  return name;
}

Expected<std::unique_ptr<Graph>> importModelFromBytes(std::string_view bytes,
                                                      const ImportOptions &options,
                                                      const std::string &externalDataDir,
                                                      const std::string &displayName) {
  KILN_TRY(::onnx::ModelProto model,
           loadModelProto(bytes, options, externalDataDir, displayName));
  return ModelImporter(model, options, displayName).run();
}

Expected<std::unique_ptr<Graph>> importModel(const std::string &path,
                                             const ImportOptions &options) {
  // protobuf parses at most 2 GiB; larger models keep their weights in external data.
  KILN_TRY(std::string bytes, readRegularFile(path, "ONNX model", uint64_t{INT_MAX}));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return importModelFromBytes(bytes, options, dir.empty() ? "." : dir, path);
}

std::vector<SupportedOp> supportedOps() {
  std::vector<SupportedOp> ops;
  for (const Converter &converter : converters())
    ops.push_back({std::string(converter.opType), std::string(converter.domain),
                   std::string(converter.note)});
  return ops;
}

} // namespace kiln::onnx
