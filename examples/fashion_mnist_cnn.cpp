// The main-job example: builds the seed CNN in the DSL, compiles it with
// kiln::compile for the best device present (the CPU in this build), checks the
// first batch against the reference interpreter, classifies Fashion-MNIST's
// test set and reports accuracy and time per batch. Weights are seeded and
// untrained unless loaded from a safetensors file (`kiln train cnn
// --save-weights FILE` writes one); pixels are normalized as that recipe trains.
//
//   fashion_mnist_cnn [--batch N] [--images N] [--target cpu|cuda|sim|auto] [--data DIR]
//                     [--weights FILE] [--seed S] [--save-weights FILE] [--print-ir]
#include "examples/models/FashionMnistCnn.h"
#include "frontend/Evaluate.h"
#include "frontend/data/FashionMnist.h"
#include "frontend/data/Normalization.h"
#include "frontend/io/Safetensors.h"
#include "compiler/Compile.h"
#include "ir/graph/Printer.h"
#include "support/Elapsed.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace kiln;

namespace {

struct Options {
  int64_t batch = 64;
  int64_t images = 0; ///< 0: the whole test set
  TargetKind target = TargetKind::Auto;
  bool printIr = false;
  std::string dataDir = data::kFashionMnistDirectory;
  std::string weights;
  std::string saveWeights;
  uint64_t seed = 0;
};

void printUsage(std::FILE *out) {
  fmt::print(out,
             "usage: fashion_mnist_cnn [--batch N] [--images N] [--target cpu|cuda|sim|auto] [--data DIR]\n"
             "                         [--weights FILE] [--seed S] [--save-weights FILE] [--print-ir]\n"
             "  --batch N        images per run of the compiled model (default 64)\n"
             "  --images N       test images to classify (default: all 10000)\n"
             "  --target T       cpu, cuda, sim or auto (default auto: the GPU when there is\n"
             "                   one, else the CPU)\n"
             "  --print-ir       print the model's graph IR first\n"
             "  --data DIR       Fashion-MNIST IDX files (default {})\n"
             "  --weights FILE   parameters from a safetensors file (default: untrained,\n"
             "                   random weights from --seed)\n"
             "  --seed S         seed of the untrained weights (default 0)\n"
             "  --save-weights FILE  write the parameters used to a safetensors file\n",
             data::kFashionMnistDirectory);
}

/// The value of `flag`, an integer of at least `min` (0 or 1).
template <typename T> Expected<T> parseNumber(std::string_view flag, std::string_view text, T min) {
  T value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} expects a {} integer, got '{}'", flag,
                                 min > 0 ? "positive" : "non-negative", text));
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
    if (flag == "--print-ir") {
      options.printIr = true;
      continue;
    }
    if (i + 1 >= argc)
      return makeError(ErrorCode::InvalidArgument, fmt::format("{} needs a value", flag));
    std::string_view value = argv[++i];
    if (flag == "--batch") {
      KILN_TRY(options.batch, parseNumber<int64_t>(flag, value, 1));
    } else if (flag == "--seed") {
      KILN_TRY(options.seed, parseNumber<uint64_t>(flag, value, 0));
    } else if (flag == "--images") {
      KILN_TRY(options.images, parseNumber<int64_t>(flag, value, 1));
    } else if (flag == "--target") {
      KILN_TRY(options.target, parseTargetKind(value));
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

/// Images [first, first + batch) of `all`, zero-padded past the end of the set.
HostTensor batchAt(const HostTensor &all, int64_t first, int64_t batch) {
  std::vector<int64_t> shape = all.shape();
  shape[0] = batch;
  HostTensor rows(all.dtype(), shape);
  size_t rowBytes = all.byteSize() / static_cast<size_t>(all.shape()[0]);
  int64_t available = std::min(batch, all.shape()[0] - first);
  std::memcpy(rows.bytes().data(), all.bytes().data() + static_cast<size_t>(first) * rowBytes,
              static_cast<size_t>(available) * rowBytes);
  return rows;
}

int64_t argmaxRow(const HostTensor &probabilities, int64_t row, int64_t classes) {
  int64_t best = 0;
  for (int64_t k = 1; k < classes; ++k)
    if (probabilities.getDouble(row * classes + k) > probabilities.getDouble(row * classes + best))
      best = k;
  return best;
}

int fail(const Error &error) {
  fmt::print(stderr, "error: {}\n", error.str());
  return 1;
}

int run(const Options &options) {
  Graph graph("fashion_mnist_cnn", options.seed);
  examples::buildFashionMnistCnn(graph, {.batch = options.batch});
  if (auto status = graph.finalize(); !status)
    return fail(status.error());
  if (options.printIr)
    fmt::print("== The seed CNN's graph IR (batch {}) ==\n{}\n", options.batch,
               ir::printGraph(graph.ir()));

  if (options.weights.empty()) {
    fmt::print("Weights: UNTRAINED -- random, seeded (seed {}). Accuracy stays near chance "
               "(10%) until the model is trained (training comes in a later issue) or weights "
               "are loaded with --weights FILE.\n",
               options.seed);
  } else {
    auto loaded = io::loadSafetensors(options.weights);
    if (!loaded)
      return fail(loaded.error());
    if (auto status = graph.loadParamValues(*loaded); !status) {
      fmt::print(stderr, "error: {}: {}\n", options.weights, status.error().str());
      return 1;
    }
    fmt::print("Weights: loaded from {} ({} tensors).\n", options.weights, loaded->size());
  }
  if (!options.saveWeights.empty()) {
    if (auto saved = io::saveSafetensors(options.saveWeights, graph.paramValues()); !saved)
      return fail(saved.error());
    fmt::print("Saved the {} parameters to {}.\n", graph.paramValues().size(),
               options.saveWeights);
  }

  auto testSet = data::loadFashionMnist(data::Split::Test, options.dataDir);
  if (!testSet)
    return fail(testSet.error());
  const HostTensor *allImages = &testSet->images, *allLabels = &testSet->labels;
  // The pixels as the cnn training recipe (kiln train cnn) sees them, so its weights apply.
  for (float &pixel : testSet->images.as<float>())
    pixel = static_cast<float>((pixel - data::kFashionMnistMean) / data::kFashionMnistStddev);
  int64_t total = allImages->shape()[0];
  int64_t count = options.images > 0 ? std::min(options.images, total) : total;

  // Compile for the CPU (auto: the best device present).
  CompileOptions compileOptions;
  compileOptions.target = options.target;
  CompileReport report;
  auto model = compile(graph.ir(), compileOptions, &report);
  if (!model)
    return fail(model.error());
  if (auto bound = model->bindParams(graph.paramValues()); !bound)
    return fail(bound.error());
  MemoryStats memory = model->memoryStats();
  fmt::print("Target: {}\n", report.target);
  if (!report.fallbackReason.empty())
    fmt::print("Note: {}\n", report.fallbackReason);
  fmt::print("Compiled {} fusion groups into {} kernels in {:.2f} s; arena {:.1f} KiB "
             "(unplanned {:.1f} KiB).\n\n",
             report.numGroups, report.numKernels, report.totalSeconds,
             static_cast<double>(memory.arenaBytes) / 1024,
             static_cast<double>(memory.unplannedBytes) / 1024);

  // The first batch is also checked against the fp64 reference interpreter.
  HostTensor firstBatch = batchAt(*allImages, 0, options.batch);
  auto reference = evaluate(graph, {{"images", firstBatch}});
  auto compiledFirst = model->run({{"images", firstBatch}});
  if (!reference || !compiledFirst)
    return fail(!reference ? reference.error() : compiledFirst.error());
  Comparison check = compareTensors(compiledFirst->at("probabilities"),
                                    reference->at("probabilities"), toleranceFor(DType::F32));
  fmt::print("First batch against the reference interpreter: {} (max abs error {:.2g}).\n",
             check.ok ? "match" : "MISMATCH " + check.firstMismatchStr, check.maxAbsError);
  if (!check.ok)
    return 1;

  int64_t correct = 0;
  std::vector<double> batchSeconds;
  std::vector<int64_t> firstPredictions;
  for (int64_t first = 0; first < count; first += options.batch) {
    HostTensor images = batchAt(*allImages, first, options.batch);
    auto start = std::chrono::steady_clock::now();
    auto outputs = model->run({{"images", images}});
    batchSeconds.push_back(secondsSince(start));
    if (!outputs)
      return fail(outputs.error());
    const HostTensor &probabilities = outputs->at("probabilities");
    for (int64_t row = 0; row < options.batch && first + row < count; ++row) {
      int64_t predicted = argmaxRow(probabilities, row, data::kFashionMnistClasses);
      correct += predicted == static_cast<int64_t>(allLabels->getDouble(first + row));
      if (first + row < 8)
        firstPredictions.push_back(predicted);
    }
  }

  fmt::print("\n{:>5}  {:<12} {}\n", "image", "predicted", "true");
  for (size_t i = 0; i < firstPredictions.size(); ++i) {
    auto truth = static_cast<int64_t>(allLabels->getDouble(static_cast<int64_t>(i)));
    fmt::print("{:>5}  {:<12} {}\n", i, data::kFashionMnistClassNames[firstPredictions[i]],
               data::kFashionMnistClassNames[truth]);
  }
  std::vector<double> sorted = batchSeconds;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  fmt::print("\nAccuracy: {:.2f}% ({} of {} test images){}\n",
             100.0 * static_cast<double>(correct) / static_cast<double>(count), correct, count,
             options.weights.empty() ? " -- untrained weights, chance is 10%" : "");
  fmt::print("Time per batch of {}: {:.3f} ms median over {} batches ({:.0f} images/s)\n",
             options.batch, median * 1e3, batchSeconds.size(),
             static_cast<double>(options.batch) / median);
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
