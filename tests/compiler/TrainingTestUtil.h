// Shared pieces of the training tests: a tiny MLP classifier, a linearly
// separable synthetic data set for it, and the comparison of two trainers.
#pragma once

#include "compiler/training/Trainer.h"
#include "frontend/Graph.h"
#include "frontend/nn/Dense.h"
#include "frontend/nn/Losses.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

namespace kiln::test {

struct MlpShape {
  int64_t batch = 6;
  int64_t features = 5;
  int64_t hidden = 7;
  int64_t classes = 3;
};

/// x [batch, features] -> Dense(hidden, relu) -> Dense(classes) = "logits";
/// "loss" = softmaxCrossEntropy(logits, "labels"). The seed and the layer
/// names fix the initial weights, whatever the batch size.
inline std::unique_ptr<Graph> buildMlp(const MlpShape &shape, bool freezeFirstLayer = false,
                                       double labelSmoothing = 0.0) {
  auto graph = std::make_unique<Graph>("mlp", 7);
  Tensor x = graph->input("x", {shape.batch, shape.features});
  Tensor labels = graph->input("labels", {shape.batch}, DType::I32);
  nn::Dense first(shape.hidden, nn::Activation::Relu, true, "hidden");
  first.setTrainable(!freezeFirstLayer);
  nn::Dense second(shape.classes, nn::Activation::Linear, true, "out");
  Tensor logits = second(*graph, first(*graph, x));
  graph->output("logits", logits);
  graph->output("loss", nn::softmaxCrossEntropy(logits, labels, labelSmoothing));
  return graph;
}

/// A batch whose label is the argmax of a fixed linear map of x: separable,
/// so a small MLP can drive the loss down.
inline NamedTensors separableBatch(const MlpShape &shape, uint64_t seed) {
  Rng rng(seed);
  HostTensor x = HostTensor::randomUniform(DType::F32, {shape.batch, shape.features}, rng);
  HostTensor labels(DType::I32, {shape.batch});
  for (int64_t n = 0; n < shape.batch; ++n) {
    int64_t best = 0;
    double bestScore = -1e300;
    for (int64_t c = 0; c < shape.classes; ++c) {
      double score = 0;
      for (int64_t f = 0; f < shape.features; ++f)
        score += x.getDouble(n * shape.features + f) * (((c + 1) * (f + 2)) % 5 - 2.0);
      if (score > bestScore) {
        bestScore = score;
        best = c;
      }
    }
    labels.setDouble(n, static_cast<double>(best));
  }
  return {{"x", x}, {"labels", labels}};
}

/// Rows [begin, end) of every tensor of a batch (all batch-major).
inline NamedTensors sliceBatch(const NamedTensors &batch, int64_t begin, int64_t end) {
  NamedTensors slice;
  for (const auto &[name, tensor] : batch) {
    std::vector<int64_t> shape = tensor.shape();
    int64_t rowBytes = static_cast<int64_t>(tensor.byteSize()) / shape[0];
    shape[0] = end - begin;
    HostTensor part(tensor.dtype(), shape);
    std::memcpy(part.bytes().data(), tensor.bytes().data() + begin * rowBytes,
                static_cast<size_t>((end - begin) * rowBytes));
    slice.emplace(name, std::move(part));
  }
  return slice;
}

/// Every trainable parameter of `trainer` and its state slots against the packed update
/// outputs (updateOutputName) of the step program run in the fp64 interpreter: f32 through
/// one forward and backward pass, 1e-5 relative and 1e-6 absolute.
inline void checkStateMatchesUpdates(const training::Trainer &trainer,
                                     const NamedTensors &reference) {
  NamedTensors params = trainer.params().value(), state = trainer.optimizerState().value();
  for (const std::string &name : trainer.program().trainable) {
    CAPTURE(name);
    const HostTensor &packed = reference.at(training::updateOutputName(name));
    std::vector<const HostTensor *> parts = {&params.at(name)};
    for (const std::string &slot : trainer.program().stateSlots)
      parts.push_back(&state.at(training::stateName(slot, name)));
    int64_t size = parts[0]->numElements();
    for (size_t part = 0; part < parts.size(); ++part)
      for (int64_t i = 0; i < size; ++i)
        CHECK(parts[part]->getDouble(i) ==
              Approx(packed.getDouble(static_cast<int64_t>(part) * size + i))
                  .epsilon(1e-5)
                  .margin(1e-6));
  }
}

/// Every parameter of `actual` within `epsilon` (relative; a tenth of it
/// absolute near zero) of `expected`'s: the same training on two targets,
/// whose kernels sum in different orders.
inline void checkParamsClose(const training::Trainer &expected, const training::Trainer &actual,
                             double epsilon) {
  NamedTensors want = expected.params().value(), got = actual.params().value();
  REQUIRE(want.size() == got.size());
  for (const auto &[name, value] : want)
    for (int64_t i = 0; i < value.numElements(); ++i)
      CHECK(got.at(name).getDouble(i) ==
            Approx(value.getDouble(i)).epsilon(epsilon).margin(epsilon / 10));
}

} // namespace kiln::test
