// OnnxNode's accessors.
#include "frontend/onnx/OnnxNode.h"

#include "frontend/onnx/TensorProtoReading.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::onnx {

OnnxNode::OnnxNode(const ::onnx::NodeProto &proto, Graph &graph, std::vector<NodeInput> inputs)
    : proto_(proto), graph_(graph), inputs_(std::move(inputs)),
      outputs_(static_cast<size_t>(proto.output_size())) {}

bool OnnxNode::hasInput(size_t index) const {
  return index < inputs_.size() && !inputs_[index].name.empty();
}

Expected<Tensor> OnnxNode::input(size_t index) {
  if (!hasInput(index))
    return fail(ErrorCode::FormatError, fmt::format("input {} is missing", index));
  return inputs_[index].tensor();
}

Expected<const HostTensor *> OnnxNode::constantInput(size_t index, std::string_view what) {
  if (!hasInput(index))
    return fail(ErrorCode::FormatError, fmt::format("input {} ({}) is missing", index, what));
  if (!inputs_[index].value && inputs_[index].upstreamFailed)
    return fail(ErrorCode::InvalidArgument,
                fmt::format("input {} ({}) comes from a node that failed", index, what));
  if (!inputs_[index].value) {
    reject(fmt::format("input {} ({}) '{}' is {}; kiln needs its value when importing", index, what,
                       inputs_[index].name,
                       inputs_[index].sizes ? "symbolic sizes here" : "computed at run time"));
    return rejection();
  }
  return inputs_[index].value;
}

Expected<std::vector<int64_t>> OnnxNode::intsInput(size_t index, std::string_view what) {
  KILN_TRY(const HostTensor *value, constantInput(index, what));
  if (!isInteger(value->dtype()))
    return fail(ErrorCode::TypeMismatch,
                fmt::format("input {} ({}) is {}, not an integer tensor", index, what,
                            value->typeStr()));
  std::vector<int64_t> ints(static_cast<size_t>(value->numElements()));
  for (int64_t i = 0; i < value->numElements(); ++i)
    ints[static_cast<size_t>(i)] = value->dtype() == DType::I64
                                       ? value->as<int64_t>()[static_cast<size_t>(i)]
                                       : static_cast<int64_t>(value->getDouble(i));
  return ints;
}

Expected<SizeVector> OnnxNode::sizeValues(size_t index, std::string_view what) {
  if (const SizeVector *sizes = sizesInput(index))
    return *sizes;
  KILN_TRY(const HostTensor *value, constantInput(index, what));
  KILN_TRY(std::vector<int64_t> ints, intsInput(index, what));
  if (value->rank() > 1)
    return fail(ErrorCode::ShapeMismatch, fmt::format("input {} ({}) is {}: sizes are 0-D or 1-D",
                                                      index, what, value->typeStr()));
  return SizeVector{std::vector<ir::SizeExpr>(ints.begin(), ints.end()), value->rank() == 0};
}

const ::onnx::AttributeProto *OnnxNode::findAttr(std::string_view name) const {
  for (const auto &attribute : proto_.attribute())
    if (attribute.name() == name)
      return &attribute;
  return nullptr;
}

bool OnnxNode::hasAttr(std::string_view name) const { return findAttr(name) != nullptr; }

int64_t OnnxNode::intAttr(std::string_view name, int64_t fallback) const {
  const auto *attribute = findAttr(name);
  return attribute ? attribute->i() : fallback;
}

double OnnxNode::floatAttr(std::string_view name, double fallback) const {
  const auto *attribute = findAttr(name);
  return attribute ? attribute->f() : fallback;
}

std::string OnnxNode::stringAttr(std::string_view name, std::string fallback) const {
  const auto *attribute = findAttr(name);
  return attribute ? attribute->s() : fallback;
}

std::vector<int64_t> OnnxNode::intsAttr(std::string_view name,
                                        std::vector<int64_t> fallback) const {
  const auto *attribute = findAttr(name);
  if (!attribute)
    return fallback;
  return {attribute->ints().begin(), attribute->ints().end()};
}

std::vector<std::string> OnnxNode::stringsAttr(std::string_view name,
                                               std::vector<std::string> fallback) const {
  const auto *attribute = findAttr(name);
  if (!attribute)
    return fallback;
  return {attribute->strings().begin(), attribute->strings().end()};
}

std::vector<double> OnnxNode::floatsAttr(std::string_view name,
                                         std::vector<double> fallback) const {
  const auto *attribute = findAttr(name);
  if (!attribute)
    return fallback;
  return {attribute->floats().begin(), attribute->floats().end()};
}

Expected<HostTensor> OnnxNode::tensorAttr(std::string_view name) const {
  const auto *attribute = findAttr(name);
  if (!attribute || !attribute->has_t())
    return fail(ErrorCode::FormatError, fmt::format("attribute '{}' is missing", name));
  auto value = tensorFromProto(attribute->t(), fmt::format("{}.{}", describe(), name));
  if (!value)
    return fail(value.error().code(), value.error().message());
  return value;
}

bool OnnxNode::hasOutput(size_t index) const {
  return index < static_cast<size_t>(proto_.output_size()) &&
         !proto_.output(static_cast<int>(index)).empty();
}

void OnnxNode::setOutput(size_t index, Tensor value) {
  KILN_CHECK(index < outputs_.size(), "an ONNX converter sets an output the node lacks");
  outputs_[index].tensor = value;
}

void OnnxNode::setConstantOutput(size_t index, HostTensor value) {
  KILN_CHECK(index < outputs_.size(), "an ONNX converter sets an output the node lacks");
  outputs_[index].value = std::move(value);
}

void OnnxNode::reject(std::string what) { rejections_.push_back(std::move(what)); }

std::unexpected<Error> OnnxNode::rejection() const {
  return std::unexpected(Error(ErrorCode::Unsupported,
                               fmt::format("{}: {}", describe(), fmt::join(rejections_, "; "))));
}

std::unexpected<Error> OnnxNode::fail(ErrorCode code, std::string message) const {
  return std::unexpected(Error(code, fmt::format("{}: {}", describe(), message)));
}

Expected<int64_t> OnnxNode::staticDim(const Tensor &x, int64_t axis) const {
  ir::SizeExpr size = x.type().size(axis < 0 ? axis + x.rank() : axis);
  if (size.isConstant())
    return size.constant();
  return fail(ErrorCode::Unsupported,
              fmt::format("its conversion reads dim {} of {} as a number, and that dim is the "
                          "size {} (a dim_param); give the input's shape (--shape NAME=D0,D1,...) "
                          "to import a static model",
                          axis, x.str(), size.str()));
}

Expected<Shape> OnnxNode::staticShape(const Tensor &x) const {
  Shape shape;
  for (int64_t axis = 0; axis < x.rank(); ++axis) {
    KILN_TRY(int64_t size, staticDim(x, axis));
    shape.push_back(size);
  }
  return shape;
}

std::string OnnxNode::describe() const {
  std::string domain = proto_.domain().empty() ? "" : proto_.domain() + ".";
  if (proto_.name().empty())
    return fmt::format("{}{} (output '{}')", domain, proto_.op_type(),
                       proto_.output_size() > 0 ? proto_.output(0) : "");
  return fmt::format("{}{} '{}'", domain, proto_.op_type(), proto_.name());
}

} // namespace kiln::onnx
