// The layers of frontend/nn as kiln._kiln.nn_* classes with Keras's keyword names;
// kiln/nn.py gives them their public names and adds Sequential and Activation.
#include "Arguments.h"
#include "PyGraph.h"
#include "TensorConversion.h"

#include "frontend/nn/Layers.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

nn::Activation activationNamed(const std::optional<std::string> &name) {
  if (!name)
    return nn::Activation::Linear;
  std::string names;
  for (int index = 0; index <= static_cast<int>(nn::Activation::Elu); ++index) {
    auto activation = static_cast<nn::Activation>(index);
    if (*name == nn::activationName(activation))
      return activation;
    names += (index ? ", " : "") + std::string(nn::activationName(activation));
  }
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("unknown activation '{}' (kiln has {})", *name, names),
                        pythonCallerLocation())};
}

std::string nameOf(const std::optional<std::string> &name) { return name.value_or(""); }

/// The shared base: applying a layer, its name, and Keras's `trainable`.
void bindLayerBase(py::module_ &m) {
  py::class_<nn::Layer, std::shared_ptr<nn::Layer>>(m, "Layer")
      .def(
          "__call__",
          [](nn::Layer &layer, const GraphHandle &graph, const PyTensor &x) {
            return buildOn(graph, [&](Graph &g) { return layer(g, x.tensor, kNoSourceLocation); });
          },
          py::arg("graph"), py::arg("x"),
          "Applies the layer to x, creating its parameters on the first call in a graph.")
      .def_property_readonly("name", &nn::Layer::name)
      .def_property("trainable", &nn::Layer::trainable, &nn::Layer::setTrainable,
                    "False freezes the parameters the layer creates afterwards.");
}

template <typename L> using LayerClass = py::class_<L, nn::Layer, std::shared_ptr<L>>;

void bindDenseAndConvolution(py::module_ &m) {
  LayerClass<nn::Dense>(m, "Dense")
      .def(py::init([](int64_t units, std::optional<std::string> activation, bool useBias,
                       std::optional<std::string> name) {
             nn::DenseConfig config;
             config.units = units;
             config.activation = activationNamed(activation);
             config.useBias = useBias;
             config.name = nameOf(name);
             return std::make_shared<nn::Dense>(config);
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("name") = py::none());
  LayerClass<nn::Conv2D>(m, "Conv2D")
      .def(py::init([](int64_t filters, py::object kernelSize, py::object strides,
                       py::object padding, py::object dilationRate, int64_t groups,
                       std::optional<std::string> activation, bool useBias,
                       const std::string &layout, std::optional<std::string> name) {
             nn::Conv2DConfig config;
             config.filters = filters;
             config.kernel = pairOf(kernelSize);
             config.stride = pairOf(strides);
             config.padding = paddingOf(padding);
             config.dilation = pairOf(dilationRate);
             config.groups = groups;
             config.activation = activationNamed(activation);
             config.useBias = useBias;
             config.layout = layoutNamed(layout);
             config.name = nameOf(name);
             return std::make_shared<nn::Conv2D>(config);
           }),
           py::arg("filters"), py::arg("kernel_size"), py::arg("strides") = 1,
           py::arg("padding") = "valid", py::arg("dilation_rate") = 1, py::arg("groups") = 1,
           py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("layout") = "nchw", py::arg("name") = py::none());
}

template <typename Pool> void bindPool(py::module_ &m, const char *className, bool average) {
  auto make = [](py::object poolSize, py::object strides, py::object padding,
                 const std::string &layout, bool countIncludePad, bool ceilMode,
                 std::optional<std::string> name) {
    nn::Pool2DConfig config;
    config.pool = pairOf(poolSize);
    config.stride = strides.is_none() ? std::array<int64_t, 2>{0, 0} : pairOf(strides);
    config.padding = paddingOf(padding);
    config.layout = layoutNamed(layout);
    config.countIncludePad = countIncludePad;
    config.ceilMode = ceilMode;
    config.name = nameOf(name);
    return std::make_shared<Pool>(config);
  };
  LayerClass<Pool> cls(m, className);
  if (average)
    cls.def(py::init(make), py::arg("pool_size") = 2, py::arg("strides") = py::none(),
            py::arg("padding") = "valid", py::arg("layout") = "nchw",
            py::arg("count_include_pad") = true, py::arg("ceil_mode") = false,
            py::arg("name") = py::none());
  else
    cls.def(
        py::init([make](py::object poolSize, py::object strides, py::object padding,
                        const std::string &layout, bool ceilMode, std::optional<std::string> name) {
          return make(poolSize, strides, padding, layout, true, ceilMode, name);
        }),
        py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = "valid",
        py::arg("layout") = "nchw", py::arg("ceil_mode") = false, py::arg("name") = py::none());
}

void bindNormalizationAndShape(py::module_ &m) {
  LayerClass<nn::BatchNorm>(m, "BatchNorm")
      .def(py::init([](int64_t axis, double epsilon, std::optional<std::string> name) {
             return std::make_shared<nn::BatchNorm>(
                 nn::BatchNormConfig{axis, epsilon, nameOf(name)});
           }),
           py::arg("axis") = 1, py::arg("epsilon") = 1e-5, py::arg("name") = py::none());
  LayerClass<nn::LayerNorm>(m, "LayerNorm")
      .def(py::init([](int64_t axis, double epsilon, std::optional<std::string> name) {
             return std::make_shared<nn::LayerNorm>(
                 nn::LayerNormConfig{axis, epsilon, nameOf(name)});
           }),
           py::arg("axis") = -1, py::arg("epsilon") = 1e-5, py::arg("name") = py::none());
  LayerClass<nn::Dropout>(m, "Dropout")
      .def(py::init([](double rate, std::optional<std::string> name) {
             return std::make_shared<nn::Dropout>(rate, nameOf(name));
           }),
           py::arg("rate"), py::arg("name") = py::none())
      .def_property_readonly("rate", &nn::Dropout::rate);
  LayerClass<nn::Flatten>(m, "Flatten")
      .def(py::init([](std::optional<std::string> name) {
             return std::make_shared<nn::Flatten>(nameOf(name));
           }),
           py::arg("name") = py::none());
  LayerClass<nn::Embedding>(m, "Embedding")
      .def(py::init([](int64_t inputDim, int64_t outputDim, const std::string &dtype,
                       std::optional<std::string> name) {
             nn::EmbeddingConfig config;
             config.vocabularySize = inputDim;
             config.dim = outputDim;
             config.dtype = dtypeNamed(dtype);
             config.name = nameOf(name);
             return std::make_shared<nn::Embedding>(config);
           }),
           py::arg("input_dim"), py::arg("output_dim"), py::arg("dtype") = "f32",
           py::arg("name") = py::none());
}

void bindSequenceLayers(py::module_ &m) {
  LayerClass<nn::LSTM>(m, "LSTM").def(
      py::init([](int64_t units, bool returnSequences, int64_t layers, bool bidirectional,
                  bool unitForgetBias, std::optional<std::string> name) {
        nn::LSTMConfig config;
        config.units = units;
        config.returnSequences = returnSequences;
        config.layers = layers;
        config.bidirectional = bidirectional;
        config.unitForgetBias = unitForgetBias;
        config.name = nameOf(name);
        return std::make_shared<nn::LSTM>(config);
      }),
      py::arg("units"), py::arg("return_sequences") = false, py::arg("layers") = 1,
      py::arg("bidirectional") = false, py::arg("unit_forget_bias") = true,
      py::arg("name") = py::none());
  LayerClass<nn::GRU>(m, "GRU").def(
      py::init([](int64_t units, bool returnSequences, int64_t layers, bool bidirectional,
                  std::optional<std::string> name) {
        nn::GRUConfig config;
        config.units = units;
        config.returnSequences = returnSequences;
        config.layers = layers;
        config.bidirectional = bidirectional;
        config.name = nameOf(name);
        return std::make_shared<nn::GRU>(config);
      }),
      py::arg("units"), py::arg("return_sequences") = false, py::arg("layers") = 1,
      py::arg("bidirectional") = false, py::arg("name") = py::none());
  LayerClass<nn::MultiHeadAttention>(m, "MultiHeadAttention")
      .def(py::init([](int64_t numHeads, int64_t keyDim, int64_t valueDim, int64_t outputDim,
                       bool causal, bool useBias, std::optional<std::string> name) {
             nn::MultiHeadAttentionConfig config;
             config.numHeads = numHeads;
             config.keyDim = keyDim;
             config.valueDim = valueDim;
             config.outputDim = outputDim;
             config.causal = causal;
             config.useBias = useBias;
             config.name = nameOf(name);
             return std::make_shared<nn::MultiHeadAttention>(config);
           }),
           py::arg("num_heads"), py::arg("key_dim"), py::arg("value_dim") = 0,
           py::arg("output_dim") = 0, py::arg("causal") = false, py::arg("use_bias") = true,
           py::arg("name") = py::none())
      .def(
          "__call__",
          [](nn::MultiHeadAttention &layer, const GraphHandle &graph, const PyTensor &query,
             std::optional<PyTensor> value, std::optional<PyTensor> keyPaddingMask) {
            return buildOn(graph, [&](Graph &g) {
              if (!value && !keyPaddingMask)
                return layer(g, query.tensor, kNoSourceLocation);
              Tensor keys = value ? value->tensor : query.tensor;
              return keyPaddingMask
                         ? layer(g, query.tensor, keys, keyPaddingMask->tensor, kNoSourceLocation)
                         : layer(g, query.tensor, keys, kNoSourceLocation);
            });
          },
          py::arg("graph"), py::arg("query"), py::arg("value") = py::none(),
          py::arg("key_padding_mask") = py::none(),
          "Self-attention on `query`, or cross-attention with keys and values from `value`.");
}

} // namespace

void bindNn(py::module_ &module) {
  py::module_ m = module.def_submodule("nn", "kiln's nn layers (use kiln.nn)");
  bindLayerBase(m);
  bindDenseAndConvolution(m);
  bindPool<nn::MaxPool2D>(m, "MaxPool2D", false);
  bindPool<nn::AvgPool2D>(m, "AvgPool2D", true);
  bindNormalizationAndShape(m);
  bindSequenceLayers(m);
  m.def(
      "apply_activation",
      [](const PyTensor &x, std::optional<std::string> activation) {
        nn::Activation chosen = activationNamed(activation);
        return buildOn(x.graph, [&](Graph &) {
          return nn::applyActivation(x.tensor, chosen, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("activation"), "Applies a Keras-named activation (None: identity).");
}

} // namespace kiln::python
