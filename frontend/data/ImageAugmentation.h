// Per-sample image augmentation for training: random horizontal flips and
// random crops of a zero-padded image, on one f32 sample laid out [C, H, W].
#pragma once

#include "support/HostTensor.h"

#include <cstdint>
#include <span>

namespace kiln::data {

/// The shape of one image sample, channels first (NCHW without the N).
struct ImageShape {
  int64_t channels = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t numElements() const { return channels * height * width; }
};

/// Which augmentations to apply; the defaults apply none.
struct AugmentationOptions {
  /// Probability of mirroring a sample left to right (0.5 is the usual choice).
  double flipProbability = 0.0;
  /// Pad every side with this many zeros, then crop a random H x W window
  /// back out (2 for 28x28 Fashion-MNIST: shifts of up to 2 pixels).
  int64_t cropPadding = 0;

  bool any() const { return flipProbability > 0.0 || cropPadding > 0; }
};

/// Mirrors every row of every channel in place.
void flipHorizontal(std::span<float> sample, ImageShape shape);

/// Writes into `out` the H x W window at (top, left) of `in` padded with
/// `padding` zeros on every side; top and left lie in [0, 2 * padding], and
/// (padding, padding) gives `in` back. `in` and `out` must not overlap.
void cropPadded(std::span<const float> in, std::span<float> out, ImageShape shape,
                int64_t padding, int64_t top, int64_t left);

/// Applies `options` to one sample in place, drawing from `rng` in a fixed
/// order (the flip, then the crop's top and left), and using `scratch`
/// (resized as needed) for the crop.
void augmentSample(std::span<float> sample, ImageShape shape, const AugmentationOptions &options,
                   Rng &rng, std::vector<float> &scratch);

} // namespace kiln::data
