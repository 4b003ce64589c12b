// nn::Layer: naming, scoping and parameter creation shared by every layer.
#include "frontend/nn/Layer.h"

#include <fmt/format.h>
#include <new>

namespace kiln::nn {

Layer::Layer(std::string baseName, std::string name)
    : baseName_(std::move(baseName)), givenName_(std::move(name)) {}

Tensor Layer::operator()(Graph &graph, Tensor x, std::source_location loc) {
  return call(graph, {x}, loc, [&] { return forward(graph, x, loc); });
}

Tensor Layer::call(Graph &graph, std::initializer_list<Tensor> inputs,
                   const std::source_location &loc, const std::function<Tensor()> &body) {
  size_t index = 0;
  for (const Tensor &input : inputs) {
    if (input.poisoned() && input.graph() == &graph)
      return input;
    if (input.empty())
      return fail(graph, fmt::format("input {} is an empty (default-constructed) Tensor", index),
                  loc);
    if (input.graph() != &graph)
      return fail(graph,
                  fmt::format("input {} belongs to graph '{}', not '{}'", index,
                              input.graph()->name(), graph.name()),
                  loc);
    ++index;
  }
  bind(graph);
  if (!opensScope_)
    return body();
  auto scope = graph.nameScope(name_);
  return body();
}

void Layer::bind(Graph &graph) {
  if (boundGraph_ == graph.id())
    return;
  boundGraph_ = graph.id();
  weights_.clear();
  if (givenName_.empty()) {
    name_ = graph.uniqueName(baseName_);
  } else {
    // A clash with another layer's explicit name surfaces as a duplicate
    // parameter name, which names the parameter.
    graph.reserveName(givenName_);
    name_ = givenName_;
  }
}

Tensor Layer::weight(Graph &graph, const std::string &suffix, Shape shape, DType dtype,
                     const Initializer &initializer, Fans fans, const std::source_location &loc,
                     bool trainable) {
  if (auto it = weights_.find(suffix); it != weights_.end()) {
    const Tensor &existing = it->second;
    if (existing.ok() && (existing.shape() != shape || existing.dtype() != dtype))
      return fail(graph,
                  fmt::format("parameter '{}' was created as {} by an earlier call; this call "
                              "needs {} (a layer object applied twice shares its parameters, so "
                              "its inputs must have the same shape)",
                              suffix, existing.str(), ir::TensorType{dtype, shape}.str()),
                  loc);
    return existing;
  }
  // The shape comes from the layer's configuration: check it before the
  // initializer allocates (Dense(1 << 40) would ask for terabytes). This is
  // the tensor size rule (support/ShapeLimits.h) plus one against the
  // machine's memory.
  std::string wanted = ir::TensorType{dtype, shape}.str();
  if (auto size = HostTensor::checkedByteSize(dtype, shape); !size)
    return fail(graph, fmt::format("parameter '{}': {}", suffix, size.error().message()), loc);
  Rng rng = graph.paramRng(graph.scopedName(suffix));
  HostTensor value;
  try {
    value = initializer(dtype, shape, fans, rng);
  } catch (const std::bad_alloc &) {
    return fail(graph, fmt::format("parameter '{}': out of memory allocating {}", suffix, wanted),
                loc);
  }
  if (value.dtype() != dtype || value.shape() != shape)
    return fail(graph,
                fmt::format("the initializer of parameter '{}' returned {}, but the layer asked "
                            "for {}",
                            suffix, value.typeStr(), wanted),
                loc);
  Tensor param = graph.param(suffix, std::move(value), trainable && trainable_, loc);
  weights_.emplace(suffix, param);
  return param;
}

Tensor Layer::fail(Graph &graph, const std::string &message, const std::source_location &loc,
                   ErrorCode code) {
  return graph.fail(Error(code, fmt::format("{} '{}': {}", baseName_, name(), message)), loc);
}

DType Layer::paramDType(const Tensor &x) {
  return isFloatingPoint(x.dtype()) ? x.dtype() : DType::F32;
}

} // namespace kiln::nn
