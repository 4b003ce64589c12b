// The trainable examples: model + loss + data + defaults.
#include "examples/models/TrainingRecipes.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/LstmLanguageModel.h"
#include "examples/models/Mlp.h"
#include "examples/models/VggTransfer.h"
#include "frontend/Ops.h"
#include "frontend/data/FashionMnist.h"
#include "frontend/data/Normalization.h"
#include "frontend/data/TextCorpus.h"
#include "frontend/nn/Losses.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace kiln::examples {

namespace {

std::string dataDirOr(const std::string &dataDir, const char *fallback) {
  return dataDir.empty() ? std::string(fallback) : dataDir;
}

/// Fashion-MNIST's two splits, under "images" and "labels".
Expected<TrainingData> fashionMnistData(const std::string &dataDir) {
  std::string dir = dataDirOr(dataDir, data::kFashionMnistDirectory);
  KILN_TRY(data::LabeledImages train, data::loadFashionMnist(data::Split::Train, dir));
  KILN_TRY(data::LabeledImages test, data::loadFashionMnist(data::Split::Test, dir));
  TrainingData result;
  result.train = {{"images", std::move(train.images)}, {"labels", std::move(train.labels)}};
  result.test = {{"images", std::move(test.images)}, {"labels", std::move(test.labels)}};
  result.description = fmt::format("Fashion-MNIST from {}", dir);
  return result;
}

/// The per-channel Fashion-MNIST normalization the image recipes train with.
data::DataLoaderOptions fashionMnistLoader() {
  data::DataLoaderOptions loader;
  loader.imageName = "images";
  loader.normalization.mean = {data::kFashionMnistMean};
  loader.normalization.stddev = {data::kFashionMnistStddev};
  return loader;
}

/// images f32 [N, 1, 28, 28] as normalized rows f32 [N, 784] (the MLP's "x").
HostTensor flattenNormalized(const HostTensor &images) {
  int64_t n = images.shape()[0], row = images.numElements() / n;
  HostTensor rows(DType::F32, {n, row});
  std::span<const float> in = images.as<float>();
  std::span<float> out = rows.as<float>();
  for (int64_t i = 0; i < n * row; ++i)
    out[i] = static_cast<float>((in[i] - data::kFashionMnistMean) / data::kFashionMnistStddev);
  return rows;
}

/// images f32 [N, 1, 28, 28] centred on a zero canvas of size x size and
/// repeated over three channels (the VGG base's RGB input).
HostTensor toRgbCanvas(const HostTensor &images, int64_t size) {
  int64_t n = images.shape()[0], h = images.shape()[2], w = images.shape()[3];
  int64_t top = (size - h) / 2, left = (size - w) / 2;
  HostTensor canvas(DType::F32, {n, 3, size, size});
  const float *in = images.as<float>().data();
  float *out = canvas.as<float>().data();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < h; ++y)
        std::memcpy(out + ((i * 3 + c) * size + top + y) * size + left, in + (i * h + y) * w,
                    static_cast<size_t>(w) * sizeof(float));
  return canvas;
}

/// Stands in for pretrained weights, which kiln does not ship: He-normal filters (std
/// sqrt(2 / fan_in)) keep the activations' scale through the base's 13 relu convs, so its
/// random features still tell images apart. With the layers' default Glorot scale the
/// activations shrink about 2x per layer and the head sees nearly the same features for
/// every image (the logits agree to 1e-4), so it cannot learn.
void heInitializeFrozenConvs(Graph &graph) {
  for (const std::string &name : graph.frozenParamNames()) {
    if (!name.ends_with(".weight"))
      continue;
    const HostTensor &weight = graph.paramValues().at(name);
    int64_t fanIn = weight.numElements() / weight.shape()[0];
    Rng rng = graph.paramRng(name);
    HostTensor he = HostTensor::randomNormal(weight.dtype(), weight.shape(), rng, 0.0,
                                             std::sqrt(2.0 / static_cast<double>(fanIn)));
    KILN_CHECK(graph.setParamValue(name, std::move(he)).has_value(),
               "a parameter's own shape and dtype");
  }
}

/// The batch the model is built with: the size symbol `batch` when asked for.
Dim recipeBatch(const RecipeOptions &options) {
  return options.symbolicBatch ? kiln::dim("batch", 1, options.batch) : Dim(options.batch);
}

/// The classification loss on "logits" against an i64 "labels" [batch] input.
void addClassificationLoss(Graph &graph, Tensor logits, const RecipeOptions &options) {
  Tensor labels = graph.input("labels", {recipeBatch(options)}, DType::I64);
  graph.output("loss", nn::softmaxCrossEntropy(logits, labels, options.labelSmoothing));
}

TrainingRecipe cnnRecipe() {
  TrainingRecipe recipe;
  recipe.name = "cnn";
  recipe.description = "the seed CNN on Fashion-MNIST (28x28 grayscale, 10 classes)";
  recipe.defaultBatch = 64;
  recipe.defaultEpochs = 2;
  recipe.defaultOptimizer = training::OptimizerOptions::adam(1e-3);
  recipe.labelInput = "labels";
  recipe.build = [](Graph &graph, const RecipeOptions &options) {
    FashionMnistCnnConfig config;
    config.batch = recipeBatch(options);
    config.head = ClassifierHead::Logits;
    addClassificationLoss(graph, buildFashionMnistCnn(graph, config), options);
  };
  recipe.loadData = [](const std::string &dataDir, const RecipeOptions &) {
    return fashionMnistData(dataDir);
  };
  recipe.loader = fashionMnistLoader();
  return recipe;
}

TrainingRecipe mlpRecipe() {
  TrainingRecipe recipe;
  recipe.name = "mlp";
  recipe.description = "the MLP (784-256-128-10) on Fashion-MNIST's flattened images";
  recipe.defaultBatch = 64;
  recipe.defaultEpochs = 2;
  recipe.defaultOptimizer = training::OptimizerOptions::sgd(0.05, 0.9);
  recipe.labelInput = "labels";
  recipe.build = [](Graph &graph, const RecipeOptions &options) {
    MlpConfig config;
    config.batch = recipeBatch(options);
    config.head = ClassifierHead::Logits;
    addClassificationLoss(graph, buildMlp(graph, config), options);
  };
  recipe.loadData = [](const std::string &dataDir,
                       const RecipeOptions &) -> Expected<TrainingData> {
    KILN_TRY(TrainingData images, fashionMnistData(dataDir));
    for (NamedTensors *split : {&images.train, &images.test}) {
      split->emplace("x", flattenNormalized(split->at("images")));
      split->erase("images");
    }
    images.description += ", flattened to 784 and normalized";
    return images;
  };
  return recipe;
}

TrainingRecipe lstmRecipe() {
  TrainingRecipe recipe;
  recipe.name = "lstm";
  recipe.description = "the LSTM language model (Embedding 1000x128, LSTM 128, Dense 1000) on "
                       "Debian's licence texts, next word at every position of 20";
  recipe.defaultBatch = 32;
  recipe.defaultEpochs = 3;
  recipe.defaultOptimizer = training::OptimizerOptions::adam(3e-3);
  recipe.metric = TrainingMetric::NextWordLoss;
  recipe.labelInput = "targets";
  recipe.build = [](Graph &graph, const RecipeOptions &options) {
    LstmLanguageModelConfig config;
    config.batch = recipeBatch(options);
    config.head = ClassifierHead::Logits;
    Tensor logits = buildLstmLanguageModel(graph, config);
    Tensor targets =
        graph.input("targets", {config.batch, config.sequenceLength}, DType::I64);
    // One row per word: batch * sequenceLength of them.
    graph.output("loss", nn::softmaxCrossEntropy(reshape(logits, {-1, config.vocabularySize}),
                                                 reshape(targets, {-1}), options.labelSmoothing));
  };
  recipe.loadData = [](const std::string &dataDir,
                       const RecipeOptions &) -> Expected<TrainingData> {
    data::TextCorpusOptions corpusOptions;
    if (!dataDir.empty())
      corpusOptions.directory = dataDir;
    KILN_TRY(data::TextCorpus corpus, data::loadTextCorpus(corpusOptions));
    constexpr int64_t kSequence = 20, kTrainStride = 5;
    TrainingData result;
    KILN_TRY(result.train, data::nextWordExamples(corpus.trainTokens, kSequence, {}, kTrainStride));
    KILN_TRY(result.test, data::nextWordExamples(corpus.validationTokens, kSequence));
    result.description = fmt::format(
        "{} training and {} validation words of {}; uniform loss {:.3f}, unigram entropy "
        "{:.3f} nats/word",
        corpus.trainTokens.size(), corpus.validationTokens.size(), corpusOptions.directory,
        data::uniformLoss(corpus.vocabulary.size()), data::unigramEntropy(corpus.trainTokens));
    return result;
  };
  return recipe;
}

TrainingRecipe vggTransferRecipe() {
  TrainingRecipe recipe;
  recipe.name = "vgg-transfer";
  recipe.description = "transfer learning: a frozen VGG16-shaped base and a trainable head "
                       "(Dense 256 relu, Dense 10) on Fashion-MNIST centred on 32x32 RGB";
  recipe.defaultBatch = 32;
  recipe.defaultEpochs = 1;
  recipe.defaultOptimizer = training::OptimizerOptions::adam(1e-3);
  recipe.labelInput = "labels";
  recipe.build = [](Graph &graph, const RecipeOptions &options) {
    VggTransferConfig config;
    config.batch = recipeBatch(options);
    config.imageSize = options.imageSize;
    for (int64_t &width : config.blockWidths)
      width = std::max<int64_t>(1, width / options.widthDivisor);
    config.head = ClassifierHead::Logits;
    Tensor logits = buildVggTransfer(graph, config);
    heInitializeFrozenConvs(graph);
    addClassificationLoss(graph, logits, options);
  };
  recipe.loadData = [](const std::string &dataDir,
                       const RecipeOptions &options) -> Expected<TrainingData> {
    if (options.imageSize < 32 || options.imageSize % 32 != 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("vgg-transfer: the image size must be a multiple of 32 "
                                   "(five 2x2 pools), got {}",
                                   options.imageSize));
    KILN_TRY(TrainingData images, fashionMnistData(dataDir));
    for (NamedTensors *split : {&images.train, &images.test})
      split->at("images") = toRgbCanvas(split->at("images"), options.imageSize);
    images.description += fmt::format(", centred on {0}x{0} and repeated over 3 channels",
                                      options.imageSize);
    return images;
  };
  recipe.loader.imageName = "images";
  recipe.loader.normalization.mean = std::vector<double>(3, data::kFashionMnistMean);
  recipe.loader.normalization.stddev = std::vector<double>(3, data::kFashionMnistStddev);
  return recipe;
}

} // namespace

const std::vector<TrainingRecipe> &trainingRecipes() {
  static const std::vector<TrainingRecipe> recipes = {cnnRecipe(), mlpRecipe(), lstmRecipe(),
                                                      vggTransferRecipe()};
  return recipes;
}

const TrainingRecipe *findTrainingRecipe(std::string_view name) {
  for (const TrainingRecipe &recipe : trainingRecipes())
    if (recipe.name == name)
      return &recipe;
  return nullptr;
}

std::string trainingRecipeListing() {
  std::string listing;
  for (const TrainingRecipe &recipe : trainingRecipes())
    listing += fmt::format("  {:<13} {}\n", recipe.name, recipe.description);
  return listing;
}

} // namespace kiln::examples
