// The example registry: names, descriptions and builders.
#include "examples/models/ExampleRegistry.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/Mlp.h"
#include "examples/models/ResNetStyle.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"

namespace kiln::examples {

const std::vector<ExampleModel> &exampleModels() {
  static const std::vector<ExampleModel> models = {
      {"cnn", "the Fashion-MNIST CNN: 3 conv layers, 2 max pools, 2 dense layers", 64,
       [](Graph &g, Dim batch) { buildFashionMnistCnn(g, {.batch = batch}); }},
      {"mlp", "an MLP on 784 features: Dense(256) Dense(128) Dense(10)", 64,
       [](Graph &g, Dim batch) { buildMlp(g, {.batch = batch}); }},
      {"lstm", "the LSTM language model: Embedding(1000,128) LSTM(128) Dense(1000) over 20 tokens",
       8, [](Graph &g, Dim batch) { buildLstmLanguageModel(g, {.batch = batch}); }},
      {"resnet", "a ResNet-style network on 32x32x3 with residual adds and folded batch norm", 8,
       [](Graph &g, Dim batch) { buildResNetStyle(g, {.batch = batch}); }},
      {"transformer", "a GPT-2-small transformer block (768 wide, 12 heads) over 128 tokens", 1,
       [](Graph &g, Dim batch) { buildTransformerBlock(g, {.batch = batch}); }},
      {"vgg", "VGG16's convolutional base with a Dense(256) Dense(10) head on 224x224x3", 1,
       [](Graph &g, Dim batch) { buildVggTransfer(g, {.batch = batch}); }},
  };
  return models;
}

const ExampleModel *findExampleModel(std::string_view name) {
  for (const ExampleModel &model : exampleModels())
    if (model.name == name)
      return &model;
  return nullptr;
}

} // namespace kiln::examples
