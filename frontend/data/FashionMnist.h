// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 28x28 grayscale images of
// clothing in ten classes, 60,000 for training and 10,000 for testing, read
// from the IDX files that Debian's dataset-fashion-mnist package installs.
#pragma once

#include "support/Error.h"
#include "support/HostTensor.h"

#include <array>
#include <string>

namespace kiln::data {

/// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char *kFashionMnistDirectory = "/usr/share/datasets/fashion-mnist";
inline constexpr int64_t kFashionMnistClasses = 10;
inline constexpr int64_t kFashionMnistImageSize = 28;

/// The class names, by label.
inline constexpr std::array<const char *, kFashionMnistClasses> kFashionMnistClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

enum class Split { Train, Test };

/// "train" or "test".
const char *splitName(Split split);

/// Images with one label each.
struct LabeledImages {
  HostTensor images; ///< f32 [N, 1, 28, 28], pixels in [0, 1]
  HostTensor labels; ///< i64 [N], classes 0..9
};

/// Reads one split from `directory`: {train,t10k}-images-idx3-ubyte.gz and
/// {train,t10k}-labels-idx1-ubyte.gz (or the same names without .gz, as the
/// original distribution unpacks). Errors name the file: IOError when it is
/// missing (with a note on the Debian package), FormatError when it is
/// corrupt, truncated, not 28x28 unsigned-byte images, holds a label outside
/// 0..9, or when the two files disagree on the number of examples.
Expected<LabeledImages> loadFashionMnist(Split split,
                                         const std::string &directory = kFashionMnistDirectory);

} // namespace kiln::data
