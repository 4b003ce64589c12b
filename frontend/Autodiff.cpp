// The DSL's autodiff calls: checks the handles, then appendGradients on the
// Graph's IR; errors poison the results like any other DSL call.
#include "frontend/Autodiff.h"

#include "passes/graph/Autodiff.h"

#include <fmt/format.h>

namespace kiln {

namespace {

std::vector<Tensor> poisoned(Graph *graph, size_t count) {
  return std::vector<Tensor>(count, Tensor(graph, nullptr));
}

} // namespace

std::vector<Tensor> gradients(Tensor loss, std::span<const Tensor> wrt, std::source_location loc) {
  if (loss.empty())
    for (const Tensor &tensor : wrt)
      if (!tensor.empty()) {
        tensor.graph()->fail(Error(ErrorCode::InvalidArgument,
                                   "gradients: the loss is an empty (default-constructed) Tensor"),
                             loc);
        return poisoned(tensor.graph(), wrt.size());
      }
  Graph *graph = loss.graph();
  if (graph == nullptr)
    return std::vector<Tensor>(wrt.size());
  std::vector<ir::Value *> values;
  bool anyPoisoned = loss.poisoned();
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (wrt[i].empty() || wrt[i].graph() != graph) {
      graph->fail(Error(ErrorCode::InvalidArgument,
                        wrt[i].empty()
                            ? fmt::format("gradients: wrt {} is an empty Tensor", i)
                            : fmt::format("gradients: wrt {} belongs to graph '{}', not '{}'", i,
                                          wrt[i].graph()->name(), graph->name())),
                  loc);
      return poisoned(graph, wrt.size());
    }
    anyPoisoned = anyPoisoned || wrt[i].poisoned();
    values.push_back(wrt[i].value());
  }
  if (anyPoisoned)
    return poisoned(graph, wrt.size());
  auto result = passes::appendGradients(graph->ir(), loss.value(), values);
  if (!result) {
    graph->fail(std::move(result).error(), loc);
    return poisoned(graph, wrt.size());
  }
  std::vector<Tensor> tensors;
  for (ir::Value *value : *result)
    tensors.emplace_back(graph, value);
  return tensors;
}

std::vector<ParamGradient> trainableParamGradients(Graph &graph, Tensor loss,
                                                   std::source_location loc) {
  std::vector<std::string> names = graph.trainableParamNames();
  std::vector<Tensor> params;
  for (const std::string &name : names)
    params.emplace_back(&graph, graph.ir().findParam(name));
  if (!loss.empty() && loss.graph() != &graph) {
    graph.fail(Error(ErrorCode::InvalidArgument,
                     fmt::format("gradients: the loss belongs to graph '{}', not '{}'",
                                 loss.graph()->name(), graph.name())),
               loc);
    loss = Tensor(&graph, nullptr);
  }
  if (loss.empty())
    loss = graph.fail(Error(ErrorCode::InvalidArgument,
                            "gradients: the loss is an empty (default-constructed) Tensor"),
                      loc);
  std::vector<Tensor> grads = gradients(loss, params, loc);
  std::vector<ParamGradient> result;
  for (size_t i = 0; i < names.size(); ++i)
    result.push_back({names[i], grads[i]});
  return result;
}

} // namespace kiln
