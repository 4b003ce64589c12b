// OnnxNode: what a converter sees of one ONNX node: its inputs as kiln Tensors (or as values
// known at import), its attributes with their ONNX defaults, and where its outputs go.
#pragma once

#include "frontend/Graph.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::onnx {

/// An integer value known at import as sizes, some of them symbolic: the Shape of a tensor
/// with symbolic dims and what shape arithmetic computes from it (SymbolicShapes.h). 0-D
/// (`scalar`, one size) or 1-D.
struct SizeVector {
  std::vector<ir::SizeExpr> sizes;
  bool scalar = false;
};

/// One input of the node, as the importer supplies it.
struct NodeInput {
  std::string name;                   ///< empty for an omitted optional input
  const HostTensor *value = nullptr;  ///< set when its value is known at import
  const SizeVector *sizes = nullptr;  ///< set when it is known as symbolic sizes
  std::function<Expected<Tensor>()> tensor; ///< the input in the node's graph
  /// Its producer could not be converted (a dry run): its value is unknown, which is not
  /// this node's problem.
  bool upstreamFailed = false;
};

/// One output, as the converter sets it: a Tensor of the node's graph, or a value computed
/// at import (a shape, say).
struct NodeOutput {
  Tensor tensor;
  std::optional<HostTensor> value;
};

class OnnxNode {
public:
  OnnxNode(const ::onnx::NodeProto &proto, Graph &graph, std::vector<NodeInput> inputs);

  const std::string &opType() const { return proto_.op_type(); }
  const std::string &name() const { return proto_.name(); }
  /// The graph the converter builds in (the model's, or a scratch graph when folding).
  Graph &graph() { return graph_; }

  // ---- Inputs ---------------------------------------------------------------------------------
  size_t numInputs() const { return inputs_.size(); }
  /// Whether input `index` is given (ONNX omits optional inputs by count or by empty name).
  bool hasInput(size_t index) const;
  /// Input `index` as a Tensor; an error when it is omitted.
  Expected<Tensor> input(size_t index);
  /// Input `index`'s value when it is known at import: a constant, an initializer or a
  /// folded shape computation. `what` names the input in the error otherwise
  /// ("the shape", say: kiln needs it at compile time).
  Expected<const HostTensor *> constantInput(size_t index, std::string_view what);
  /// Input `index`'s value when known at import, else nullptr (no error recorded).
  const HostTensor *knownValue(size_t index) const {
    return hasInput(index) ? inputs_[index].value : nullptr;
  }
  /// A constant integer input as int64 values.
  Expected<std::vector<int64_t>> intsInput(size_t index, std::string_view what);
  /// Input `index` when it is known as symbolic sizes, else nullptr.
  const SizeVector *sizesInput(size_t index) const {
    return hasInput(index) ? inputs_[index].sizes : nullptr;
  }
  /// An integer input known at import as sizes: symbolic ones (sizesInput), or intsInput's.
  Expected<SizeVector> sizeValues(size_t index, std::string_view what);

  // ---- Attributes (the fallback is ONNX's default) --------------------------------------------
  bool hasAttr(std::string_view name) const;
  int64_t intAttr(std::string_view name, int64_t fallback) const;
  double floatAttr(std::string_view name, double fallback) const;
  std::string stringAttr(std::string_view name, std::string fallback) const;
  std::vector<int64_t> intsAttr(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<std::string> stringsAttr(std::string_view name,
                                       std::vector<std::string> fallback = {}) const;
  std::vector<double> floatsAttr(std::string_view name, std::vector<double> fallback = {}) const;
  /// A tensor attribute's value (Constant's `value`, ConstantOfShape's `value`).
  Expected<HostTensor> tensorAttr(std::string_view name) const;

  // ---- Outputs --------------------------------------------------------------------------------
  size_t numOutputs() const { return static_cast<size_t>(proto_.output_size()); }
  /// Whether output `index` is wanted (ONNX omits optional outputs by an empty name).
  bool hasOutput(size_t index) const;
  void setOutput(size_t index, Tensor value);
  void setConstantOutput(size_t index, HostTensor value);
  std::vector<NodeOutput> &outputs() { return outputs_; }

  // ---- Errors ---------------------------------------------------------------------------------
  /// Records one thing this node asks that kiln does not handle ("attribute auto_pad =
  /// 'SAME_LOWER'"); a converter records each it finds, then returns rejection().
  void reject(std::string what);
  bool rejectedAny() const { return !rejections_.empty(); }
  /// Unsupported, listing every reject()ed item.
  std::unexpected<Error> rejection() const;
  /// An error about this node, for bad input that is not just unsupported.
  std::unexpected<Error> fail(ErrorCode code, std::string message) const;
  /// Dim `axis` of `x` where the converter computes with the number (a Shape node's output,
  /// a split's pieces): an error naming the size symbol when the dim is symbolic, so no
  /// converter reads a symbolic dim's upper bound as its size (docs/dynamic-shapes.md).
  Expected<int64_t> staticDim(const Tensor &x, int64_t axis) const;
  /// staticDim of every dim of `x`.
  Expected<Shape> staticShape(const Tensor &x) const;
  /// "Conv 'conv1'" (or "Conv #12" for an unnamed node): how errors name the node.
  std::string describe() const;

private:
  const ::onnx::AttributeProto *findAttr(std::string_view name) const;

  const ::onnx::NodeProto &proto_;
  Graph &graph_;
  std::vector<NodeInput> inputs_;
  std::vector<NodeOutput> outputs_;
  std::vector<std::string> rejections_;
};

} // namespace kiln::onnx
