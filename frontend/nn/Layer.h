// nn::Layer: the base of every layer. It picks the layer's unique name in a
// graph, opens its name scope, and creates (and on reuse, shares) its
// parameters.
#pragma once

#include "frontend/Graph.h"
#include "frontend/nn/Initializers.h"

#include <functional>
#include <map>
#include <source_location>
#include <string>

namespace kiln::nn {

/// A layer in the Keras/PyTorch manner: configured by its constructor, applied
/// with `layer(graph, x)`. Parameters are created on the first call, when the
/// input's shape is known, under the name scope `<layer name>` (so a Dense
/// layer named "dense_1" owns "dense_1.weight" and "dense_1.bias"). Calling
/// the same layer object again on the same graph reuses its parameters
/// (weight sharing).
class Layer {
public:
  virtual ~Layer() = default;
  Layer(const Layer &) = default;
  Layer(Layer &&) = default;
  Layer &operator=(const Layer &) = default;
  Layer &operator=(Layer &&) = default;

  /// Applies the layer. On a poisoned input it is a no-op.
  Tensor operator()(Graph &graph, Tensor x,
                    std::source_location loc = std::source_location::current());

  /// The name given at construction or, once applied, the unique name picked
  /// in the graph ("dense", "dense_1", ...).
  const std::string &name() const {
    return !name_.empty() ? name_ : !givenName_.empty() ? givenName_ : baseName_;
  }
  /// The layer kind's base name, "dense" or "conv2d".
  const std::string &baseName() const { return baseName_; }

  /// Keras's `layer.trainable = False`: parameters created afterwards are
  /// frozen (trainable = false in the Graph).
  void setTrainable(bool trainable) { trainable_ = trainable; }
  bool trainable() const { return trainable_; }

protected:
  /// `baseName` is the stem of automatic names; `name`, when not empty, is
  /// used as given.
  Layer(std::string baseName, std::string name);

  /// The layer's computation, run inside its name scope. `x` is ok and
  /// belongs to `graph`.
  virtual Tensor forward(Graph &graph, Tensor x, const std::source_location &loc) = 0;

  /// Runs `body` as this layer: checks that the inputs are ok Tensors of
  /// `graph`, binds the layer to the graph (picking its name there), and opens
  /// its name scope. For layers with more than one input.
  Tensor call(Graph &graph, std::initializer_list<Tensor> inputs, const std::source_location &loc,
              const std::function<Tensor()> &body);

  /// The parameter `<scope>.<suffix>`: created on first use in this graph
  /// with `initializer`, returned as is afterwards. A later call asking for a
  /// different shape (the layer applied to a differently shaped input) fails.
  Tensor weight(Graph &graph, const std::string &suffix, Shape shape, DType dtype,
                const Initializer &initializer, Fans fans, const std::source_location &loc,
                bool trainable = true);

  /// Records "<base> '<name>': <message>" as the graph's error and returns a
  /// poisoned Tensor.
  Tensor fail(Graph &graph, const std::string &message, const std::source_location &loc,
              ErrorCode code = ErrorCode::InvalidArgument);

  /// The dtype of the parameters for input `x`: x's dtype when it is a float,
  /// else f32.
  static DType paramDType(const Tensor &x);

  /// Sequential sets this: its layers are named in the enclosing scope, as in Keras.
  bool opensScope_ = true;

private:
  void bind(Graph &graph);

  std::string baseName_;
  std::string givenName_;
  std::string name_; // the name picked in the bound graph
  bool trainable_ = true;
  uint64_t boundGraph_ = 0;
  std::map<std::string, Tensor> weights_;
};

/// A layer configured by a `Config` struct, which holds its `name` and which config() returns.
template <typename Config> class ConfiguredLayer : public Layer {
public:
  const Config &config() const { return config_; }

protected:
  ConfiguredLayer(std::string baseName, Config config)
      : Layer(std::move(baseName), config.name), config_(std::move(config)) {}

  Config config_;
};

} // namespace kiln::nn
