// Builds small ONNX models in memory for the importer's tests, with the onnx library's
// protobuf classes: inputs with fixed or named dims, initializers from HostTensors (raw or
// typed fields), nodes with attributes.
#pragma once

#include "support/HostTensor.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace kiln::test {

using OnnxDim = std::variant<int64_t, std::string>;

class OnnxModelBuilder {
public:
  explicit OnnxModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(opset >= 15 ? 8 : 7);
    model_.set_producer_name("kiln-tests");
    auto *import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  ::onnx::ModelProto &model() { return model_; }
  ::onnx::GraphProto &graph() { return *model_.mutable_graph(); }

  void input(const std::string &name, int32_t elemType, const std::vector<OnnxDim> &dims) {
    describe(graph().add_input(), name, elemType, dims);
  }
  /// An empty string is a dim of unknown size (the checker wants every output's rank).
  void output(const std::string &name, int32_t elemType, const std::vector<OnnxDim> &dims) {
    describe(graph().add_output(), name, elemType, dims);
  }
  ::onnx::NodeProto &node(const std::string &op, const std::vector<std::string> &inputs,
                          const std::vector<std::string> &outputs, const std::string &name = "") {
    auto *node = graph().add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const auto &input : inputs)
      node->add_input(input);
    for (const auto &output : outputs)
      node->add_output(output);
    return *node;
  }

  static void attr(::onnx::NodeProto &node, const std::string &name, int64_t value) {
    auto *attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto_AttributeType_INT);
    attribute->set_i(value);
  }
  static void attr(::onnx::NodeProto &node, const std::string &name,
                   const std::vector<int64_t> &values) {
    auto *attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto_AttributeType_INTS);
    for (int64_t value : values)
      attribute->add_ints(value);
  }

  /// An initializer holding `value` in raw_data.
  ::onnx::TensorProto &initializer(const std::string &name, const HostTensor &value,
                                   int32_t elemType) {
    auto *tensor = graph().add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(elemType);
    for (int64_t dim : value.shape())
      tensor->add_dims(dim);
    tensor->set_raw_data(std::string(reinterpret_cast<const char *>(value.bytes().data()),
                                     value.byteSize()));
    return *tensor;
  }

  std::string bytes() const { return model_.SerializeAsString(); }

private:
  static void describe(::onnx::ValueInfoProto *info, const std::string &name, int32_t elemType,
                       const std::vector<OnnxDim> &dims) {
    info->set_name(name);
    auto *tensorType = info->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(elemType);
    auto *shape = tensorType->mutable_shape();
    for (const OnnxDim &dim : dims) {
      auto *entry = shape->add_dim();
      if (const int64_t *value = std::get_if<int64_t>(&dim))
        entry->set_dim_value(*value);
      else if (!std::get<std::string>(dim).empty())
        entry->set_dim_param(std::get<std::string>(dim));
    }
  }

  ::onnx::ModelProto model_;
};

} // namespace kiln::test
