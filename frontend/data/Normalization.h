// Per-channel normalization of image samples: (x - mean[c]) / stddev[c].
#pragma once

#include "frontend/data/ImageAugmentation.h"

#include <span>
#include <vector>

namespace kiln::data {

/// Fashion-MNIST's training-set pixel mean and standard deviation (pixels in
/// [0, 1]); loadFashionMnist's test asserts them against the data.
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStddev = 0.3530;

/// One mean and one standard deviation per channel; both empty: none.
struct Normalization {
  std::vector<double> mean;
  std::vector<double> stddev;

  bool any() const { return !mean.empty(); }
};

/// Normalizes one [C, H, W] sample in place; the arithmetic is done in fp64
/// and rounded once to f32. `normalization` must hold one value per channel.
void normalizeSample(std::span<float> sample, ImageShape shape, const Normalization &normalization);

/// Per-channel mean and (population) standard deviation of f32 images
/// [N, C, H, W], accumulated in fp64: what a Normalization for a new data set
/// should hold. InvalidArgument for another dtype or rank, or no pixels.
Expected<Normalization> channelStatistics(const HostTensor &images);

} // namespace kiln::data
