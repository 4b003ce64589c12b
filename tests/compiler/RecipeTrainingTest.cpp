// The example recipes trained end to end on the CPU at a tiny size: losses
// fall, frozen parameters stay bitwise identical, a resumed run ends where an
// uninterrupted one does, and bad options give clear errors.
#include "examples/models/RecipeTraining.h"
#include "frontend/data/FashionMnist.h"
#include "tests/frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

using namespace kiln;
using namespace kiln::examples;

namespace {

bool fashionMnistPresent() {
  return std::filesystem::exists(std::string(data::kFashionMnistDirectory) +
                                 "/t10k-images-idx3-ubyte.gz");
}

bool bitwiseEqual(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

/// Fashion-MNIST read once for every test (reading the 60,000 training images
/// takes seconds in a sanitized build).
std::shared_ptr<const TrainingData> fashionMnist(const TrainingRecipe &recipe,
                                                 const RecipeOptions &model) {
  auto data = recipe.loadData("", model);
  REQUIRE(data);
  return std::make_shared<const TrainingData>(std::move(*data));
}

RecipeTrainingOptions tinyOptions(const TrainingRecipe &recipe) {
  RecipeTrainingOptions options;
  options.model.batch = 16;
  options.training.optimizer = recipe.defaultOptimizer;
  options.training.compile.target = TargetKind::Cpu;
  options.trainLimit = 128;
  options.testLimit = 40; // not a multiple of the batch: the last one is padded
  options.progress = nullptr;
  return options;
}

} // namespace

TEST_CASE("recipes: every recipe is listed and found by name", "[training][recipes]") {
  for (const char *name : {"cnn", "mlp", "lstm", "vgg-transfer"}) {
    const TrainingRecipe *recipe = findTrainingRecipe(name);
    REQUIRE(recipe);
    CHECK(recipe->name == name);
    CHECK(trainingRecipeListing().find(name) != std::string::npos);
  }
  CHECK(findTrainingRecipe("resnet") == nullptr);
}

TEST_CASE("recipes: the MLP learns Fashion-MNIST and a resumed run ends bit for bit where an "
          "uninterrupted one does",
          "[training][recipes]") {
  // scripts/setup.sh installs it: a missing data set is a broken set-up, not a skip.
  INFO("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
  REQUIRE(fashionMnistPresent());
  const TrainingRecipe &recipe = *findTrainingRecipe("mlp");
  testing::TempDir dir;
  RecipeTrainingOptions options = tinyOptions(recipe);
  options.epochs = 3;
  options.preloaded = fashionMnist(recipe, options.model);
  options.checkpointPath = dir.file("straight.safetensors");
  auto straight = trainRecipe(recipe, options);
  REQUIRE(straight);
  REQUIRE(straight->epochs.size() == 3);
  CHECK(straight->trainExamples == 128);
  CHECK(straight->testExamples == 40);
  CHECK(straight->stepsPerEpoch == 8);
  // Three epochs over 128 images: the training loss falls well below chance
  // (log 10 = 2.30) and the held-out accuracy beats chance (10%).
  CHECK(straight->epochs.back().trainLoss < 0.8 * straight->epochs.front().trainLoss);
  CHECK(straight->epochs.back().testMetric > 0.3);

  options.epochs = 1;
  options.checkpointPath = dir.file("first.safetensors");
  REQUIRE(trainRecipe(recipe, options));
  options.epochs = 3;
  options.resumePath = dir.file("first.safetensors");
  options.checkpointPath = dir.file("resumed.safetensors");
  auto resumed = trainRecipe(recipe, options);
  REQUIRE(resumed);
  CHECK(resumed->resumedEpochs == 1);
  CHECK(resumed->epochs.size() == 2);
  REQUIRE(resumed->params.size() == straight->params.size());
  for (const auto &[name, value] : straight->params) {
    INFO(name);
    CHECK(bitwiseEqual(resumed->params.at(name), value));
  }
}

TEST_CASE("recipes: transfer learning changes the head and leaves the frozen base bitwise "
          "identical",
          "[training][recipes]") {
  // scripts/setup.sh installs it: a missing data set is a broken set-up, not a skip.
  INFO("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
  REQUIRE(fashionMnistPresent());
  const TrainingRecipe &recipe = *findTrainingRecipe("vgg-transfer");
  RecipeTrainingOptions options = tinyOptions(recipe);
  options.model.batch = 8;
  options.model.widthDivisor = 16; // VGG16's shape at 4..32 channels: a CPU test size
  options.trainLimit = 32;
  options.testLimit = 8;
  options.epochs = 1;
  options.preloaded = fashionMnist(recipe, options.model);

  Graph initial(recipe.name, options.seed);
  recipe.build(initial, options.model);
  REQUIRE(initial.finalize());
  auto trained = trainRecipe(recipe, options);
  REQUIRE(trained);
  int frozen = 0, trainable = 0;
  for (const auto &[name, before] : initial.paramValues()) {
    INFO(name);
    const HostTensor &after = trained->params.at(name);
    if (initial.isTrainable(name)) {
      ++trainable;
      CHECK_FALSE(bitwiseEqual(after, before));
    } else {
      ++frozen;
      CHECK(bitwiseEqual(after, before));
    }
  }
  CHECK(frozen == 26); // 13 convs, weight and bias each
  CHECK(trainable == 4); // fc1 and predictions
}

TEST_CASE("recipes: bad options give clear errors", "[training][recipes]") {
  // scripts/setup.sh installs it: a missing data set is a broken set-up, not a skip.
  INFO("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
  REQUIRE(fashionMnistPresent());
  RecipeTrainingOptions options = tinyOptions(*findTrainingRecipe("vgg-transfer"));
  options.model.imageSize = 48;
  auto badSize = trainRecipe(*findTrainingRecipe("vgg-transfer"), options);
  REQUIRE_FALSE(badSize);
  CHECK(badSize.error().message().find("multiple of 32") != std::string::npos);

  RecipeTrainingOptions mlp = tinyOptions(*findTrainingRecipe("mlp"));
  mlp.augmentation.flipProbability = 0.5;
  auto augmented = trainRecipe(*findTrainingRecipe("mlp"), mlp);
  REQUIRE_FALSE(augmented);
  CHECK(augmented.error().message().find("augmentation needs image inputs") != std::string::npos);

  RecipeTrainingOptions missing = tinyOptions(*findTrainingRecipe("cnn"));
  missing.dataDir = "/nonexistent/fashion-mnist";
  auto noData = trainRecipe(*findTrainingRecipe("cnn"), missing);
  REQUIRE_FALSE(noData);
  CHECK(noData.error().message().find("/nonexistent/fashion-mnist") != std::string::npos);
}
