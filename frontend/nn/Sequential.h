// nn::Sequential: layers applied one after another.
#pragma once

#include "frontend/nn/Layer.h"

#include <concepts>
#include <memory>
#include <type_traits>
#include <vector>

namespace kiln::nn {

/// `Sequential model(Conv2D(32, {3, 3}, Activation::Relu), MaxPool2D(), ...);`
/// then `Tensor y = model(graph, x);`. As in Keras, the layers are named in
/// the enclosing scope ("conv2d", "dense_1"), not under the Sequential.
class Sequential : public Layer {
public:
  Sequential();
  template <typename... Layers>
  requires(sizeof...(Layers) > 0 &&
           (std::derived_from<std::remove_cvref_t<Layers>, Layer> && ...) &&
           (!std::same_as<std::remove_cvref_t<Layers>, Sequential> &&
            ...)) explicit Sequential(Layers &&...layers)
      : Sequential() {
    (add(std::forward<Layers>(layers)), ...);
  }
  Sequential(Sequential &&) = default;
  Sequential &operator=(Sequential &&) = default;

  /// Appends a layer (moved or copied in) and returns a reference to the stored one.
  template <typename L>
  requires std::derived_from<std::remove_cvref_t<L>, Layer> std::remove_cvref_t<L>
  &add(L &&layer) {
    auto owned = std::make_unique<std::remove_cvref_t<L>>(std::forward<L>(layer));
    auto &ref = *owned;
    layers_.push_back(std::move(owned));
    return ref;
  }

  size_t size() const { return layers_.size(); }
  Layer &at(size_t index) { return *layers_.at(index); }

protected:
  Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) override;

private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

} // namespace kiln::nn
