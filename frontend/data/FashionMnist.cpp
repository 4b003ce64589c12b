// Loading Fashion-MNIST's IDX files and checking what they hold.
#include "frontend/data/FashionMnist.h"

#include "frontend/io/Idx.h"

#include <filesystem>
#include <fmt/format.h>

namespace kiln::data {

namespace {

/// The file `stem` in `directory`: the gzipped name when it exists or when
/// neither exists (so the error names the file Debian installs), else the
/// uncompressed one.
std::string findFile(const std::string &directory, const std::string &stem) {
  std::filesystem::path gzipped = std::filesystem::path(directory) / (stem + ".gz");
  std::filesystem::path plain = std::filesystem::path(directory) / stem;
  std::error_code ignored;
  if (!std::filesystem::exists(gzipped, ignored) && std::filesystem::exists(plain, ignored))
    return plain.string();
  return gzipped.string();
}

Error withPackageNote(Error error) {
  if (error.code() == ErrorCode::NotFound || error.code() == ErrorCode::IOError)
    error.withNote(fmt::format("Fashion-MNIST is in Debian's dataset-fashion-mnist package, which "
                               "installs it in {}; or pass the directory holding the IDX files",
                               kFashionMnistDirectory));
  return error;
}

} // namespace

const char *splitName(Split split) { return split == Split::Train ? "train" : "test"; }

Expected<LabeledImages> loadFashionMnist(Split split, const std::string &directory) {
  const char *prefix = split == Split::Train ? "train" : "t10k";
  std::string imagePath = findFile(directory, fmt::format("{}-images-idx3-ubyte", prefix));
  std::string labelPath = findFile(directory, fmt::format("{}-labels-idx1-ubyte", prefix));

  // readIdxImages checks the element type (unsigned bytes) and rank; the
  // size is Fashion-MNIST's own.
  auto images = io::readIdxImages(imagePath);
  if (!images)
    return std::unexpected(withPackageNote(std::move(images).error()));
  const auto &shape = images->shape();
  if (shape[2] != kFashionMnistImageSize || shape[3] != kFashionMnistImageSize)
    return makeError(ErrorCode::FormatError,
                     fmt::format("{}: expected Fashion-MNIST's 28x28 images, the file holds "
                                 "{}x{} images",
                                 imagePath, shape[2], shape[3]));

  auto labels = io::readIdxLabels(labelPath);
  if (!labels)
    return std::unexpected(withPackageNote(std::move(labels).error()));
  if (labels->shape()[0] != shape[0])
    return makeError(ErrorCode::FormatError,
                     fmt::format("{} holds {} labels but {} holds {} images: the files must "
                                 "describe the same examples",
                                 labelPath, labels->shape()[0], imagePath, shape[0]));
  std::span<const int64_t> classes = labels->as<int64_t>();
  for (size_t i = 0; i < classes.size(); ++i)
    if (classes[i] < 0 || classes[i] >= kFashionMnistClasses)
      return makeError(ErrorCode::FormatError,
                       fmt::format("{}: label {} is {}, expected a class 0..9", labelPath, i,
                                   classes[i]));
  return LabeledImages{std::move(*images), std::move(*labels)};
}

} // namespace kiln::data
