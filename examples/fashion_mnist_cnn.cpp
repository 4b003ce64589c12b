// The main-job example: builds the seed CNN in the DSL, prints its IR, and
// classifies the first images of Fashion-MNIST's test set with the reference
// interpreter, using seeded untrained weights or weights from a safetensors file.
//
//   fashion_mnist_cnn [--batch N] [--data DIR] [--weights FILE] [--seed S]
//                     [--save-weights FILE]
#include "examples/models/FashionMnistCnn.h"
#include "frontend/Evaluate.h"
#include "frontend/io/Idx.h"
#include "frontend/io/Safetensors.h"
#include "ir/graph/Printer.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

using namespace kiln;

namespace {

constexpr const char *kDefaultDataDir = "/usr/share/datasets/fashion-mnist";
constexpr std::array<const char *, 10> kClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

struct Options {
  int64_t batch = 8;
  std::string dataDir = kDefaultDataDir;
  std::string weights;
  std::string saveWeights;
  uint64_t seed = 0;
};

void printUsage(std::FILE *out) {
  fmt::print(out,
             "usage: fashion_mnist_cnn [--batch N] [--data DIR] [--weights FILE] [--seed S]\n"
             "                         [--save-weights FILE]\n"
             "  --batch N        images to classify (default 8)\n"
             "  --data DIR       Fashion-MNIST IDX files (default {})\n"
             "  --weights FILE   parameters from a safetensors file (default: untrained,\n"
             "                   random weights from --seed)\n"
             "  --seed S         seed of the untrained weights (default 0)\n"
             "  --save-weights FILE  write the parameters used to a safetensors file\n",
             kDefaultDataDir);
}

template <typename T> std::optional<T> parseNumber(std::string_view text) {
  T value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

Expected<Options> parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      printUsage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc)
      return makeError(ErrorCode::InvalidArgument, fmt::format("{} needs a value", flag));
    std::string_view value = argv[++i];
    if (flag == "--batch") {
      auto batch = parseNumber<int64_t>(value);
      if (!batch || *batch < 1)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("--batch expects a positive integer, got '{}'", value));
      options.batch = *batch;
    } else if (flag == "--seed") {
      auto seed = parseNumber<uint64_t>(value);
      if (!seed)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("--seed expects a non-negative integer, got '{}'", value));
      options.seed = *seed;
    } else if (flag == "--data") {
      options.dataDir = value;
    } else if (flag == "--weights") {
      options.weights = value;
    } else if (flag == "--save-weights") {
      options.saveWeights = value;
    } else {
      return makeError(ErrorCode::InvalidArgument, fmt::format("unknown flag '{}'", flag));
    }
  }
  return options;
}

/// `DIR/name`, or `DIR/name.gz` (the Debian package's form), whichever exists.
Expected<std::string> findIdxFile(const std::string &dir, const std::string &name) {
  for (const std::string &candidate : {dir + "/" + name, dir + "/" + name + ".gz"})
    if (std::filesystem::exists(candidate))
      return candidate;
  return makeError(ErrorCode::IOError,
                   fmt::format("Fashion-MNIST not found: neither {0}/{1} nor {0}/{1}.gz exists.\n"
                               "Install the Debian package dataset-fashion-mnist (apt-get install "
                               "dataset-fashion-mnist), or point --data at a directory with the "
                               "IDX files.",
                               dir, name));
}

/// The first `count` entries along axis 0 of `tensor`.
Expected<HostTensor> firstRows(const HostTensor &tensor, int64_t count, const std::string &what) {
  if (tensor.rank() == 0 || tensor.shape()[0] < count)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--batch {} asks for more {} than the file holds ({})", count,
                                 what, tensor.typeStr()));
  std::vector<int64_t> shape = tensor.shape();
  shape[0] = count;
  HostTensor rows(tensor.dtype(), shape);
  std::memcpy(rows.bytes().data(), tensor.bytes().data(), rows.byteSize());
  return rows;
}

int run(const Options &options) {
  Graph graph("fashion_mnist_cnn", options.seed);
  examples::buildFashionMnistCnn(graph, {.batch = options.batch});
  if (auto status = graph.finalize(); !status) {
    fmt::print(stderr, "error: {}\n", status.error().str());
    return 1;
  }
  fmt::print("== The seed CNN's graph IR (batch {}) ==\n{}\n", options.batch,
             ir::printGraph(graph.ir()));

  if (options.weights.empty()) {
    fmt::print("Weights: UNTRAINED -- random, seeded (seed {}). The predictions below are "
               "meaningless until the model is trained (training comes in a later issue) or "
               "weights are loaded with --weights FILE.\n\n",
               options.seed);
  } else {
    auto loaded = io::loadSafetensors(options.weights);
    if (!loaded) {
      fmt::print(stderr, "error: {}\n", loaded.error().str());
      return 1;
    }
    if (auto status = graph.loadParamValues(*loaded); !status) {
      fmt::print(stderr, "error: {}: {}\n", options.weights, status.error().str());
      return 1;
    }
    fmt::print("Weights: loaded from {} ({} tensors).\n\n", options.weights, loaded->size());
  }

  if (!options.saveWeights.empty()) {
    if (auto saved = io::saveSafetensors(options.saveWeights, graph.paramValues()); !saved) {
      fmt::print(stderr, "error: {}\n", saved.error().str());
      return 1;
    }
    fmt::print("Saved the {} parameters to {}.\n\n", graph.paramValues().size(),
               options.saveWeights);
  }

  auto imagesPath = findIdxFile(options.dataDir, "t10k-images-idx3-ubyte");
  auto labelsPath = findIdxFile(options.dataDir, "t10k-labels-idx1-ubyte");
  if (!imagesPath || !labelsPath) {
    fmt::print(stderr, "error: {}\n", (!imagesPath ? imagesPath : labelsPath).error().str());
    return 1;
  }
  auto allImages = io::readIdxImages(*imagesPath, /*normalize=*/true);
  auto allLabels = io::readIdxLabels(*labelsPath);
  if (!allImages || !allLabels) {
    fmt::print(stderr, "error: {}\n", (!allImages ? allImages.error() : allLabels.error()).str());
    return 1;
  }
  auto images = firstRows(*allImages, options.batch, "images");
  auto labels = firstRows(*allLabels, options.batch, "labels");
  if (!images || !labels) {
    fmt::print(stderr, "error: {}\n", (!images ? images.error() : labels.error()).str());
    return 1;
  }

  auto start = std::chrono::steady_clock::now();
  auto outputs = evaluate(graph, {{"images", *images}});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!outputs) {
    fmt::print(stderr, "error: {}\n", outputs.error().str());
    return 1;
  }
  const HostTensor &probabilities = outputs->at("probabilities");
  int64_t classes = static_cast<int64_t>(kClassNames.size());
  int64_t correct = 0;
  fmt::print("== First {} test images of {} ==\n", options.batch, *imagesPath);
  fmt::print("{:>5}  {:<12} {:>11}  {}\n", "image", "predicted", "probability", "true");
  for (int64_t image = 0; image < options.batch; ++image) {
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (probabilities.getDouble(image * classes + k) >
          probabilities.getDouble(image * classes + best))
        best = k;
    auto truth = static_cast<int64_t>(labels->getDouble(image));
    correct += best == truth;
    fmt::print("{:>5}  {:<12} {:>11.4f}  {}{}\n", image, kClassNames[best],
               probabilities.getDouble(image * classes + best),
               truth >= 0 && truth < classes ? kClassNames[truth] : "?",
               best == truth ? "  (correct)" : "");
  }
  fmt::print("\n{} of {} correct{}.\n", correct, options.batch,
             options.weights.empty() ? " (untrained weights: chance is 1 in 10)" : "");
  fmt::print("Reference interpreter (fp64, unoptimized): {:.3f} s for {} images.\n", seconds,
             options.batch);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  auto options = parseOptions(argc, argv);
  if (!options) {
    fmt::print(stderr, "error: {}\n", options.error().str());
    printUsage(stderr);
    return 2;
  }
  return run(*options);
}
