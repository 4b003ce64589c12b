// Flip and padded-crop augmentation of one image sample.
#include "frontend/data/ImageAugmentation.h"

#include "frontend/data/DataRandom.h"

#include <algorithm>

namespace kiln::data {

void flipHorizontal(std::span<float> sample, ImageShape shape) {
  KILN_CHECK(static_cast<int64_t>(sample.size()) == shape.numElements(),
             "flipHorizontal: the sample's size is not C * H * W");
  for (int64_t row = 0; row < shape.channels * shape.height; ++row) {
    auto begin = sample.begin() + row * shape.width;
    std::reverse(begin, begin + shape.width);
  }
}

void cropPadded(std::span<const float> in, std::span<float> out, ImageShape shape,
                int64_t padding, int64_t top, int64_t left) {
  KILN_CHECK(static_cast<int64_t>(in.size()) == shape.numElements() &&
                 static_cast<int64_t>(out.size()) == shape.numElements(),
             "cropPadded: a buffer's size is not C * H * W");
  KILN_CHECK(padding >= 0 && top >= 0 && left >= 0 && top <= 2 * padding &&
                 left <= 2 * padding,
             "cropPadded: the window lies outside the padded image");
  // Output pixel (y, x) reads padded pixel (y + top, x + left), which is
  // input pixel (y + top - padding, x + left - padding) or a padding zero.
  int64_t dy = top - padding, dx = left - padding;
  for (int64_t c = 0; c < shape.channels; ++c) {
    const float *plane = in.data() + c * shape.height * shape.width;
    float *outPlane = out.data() + c * shape.height * shape.width;
    for (int64_t y = 0; y < shape.height; ++y) {
      int64_t sourceY = y + dy;
      for (int64_t x = 0; x < shape.width; ++x) {
        int64_t sourceX = x + dx;
        bool inside = sourceY >= 0 && sourceY < shape.height && sourceX >= 0 &&
                      sourceX < shape.width;
        outPlane[y * shape.width + x] = inside ? plane[sourceY * shape.width + sourceX] : 0.0f;
      }
    }
  }
}

void augmentSample(std::span<float> sample, ImageShape shape, const AugmentationOptions &options,
                   Rng &rng, std::vector<float> &scratch) {
  if (options.flipProbability > 0.0 && rng.uniform() < options.flipProbability)
    flipHorizontal(sample, shape);
  if (options.cropPadding > 0) {
    auto positions = static_cast<uint64_t>(2 * options.cropPadding + 1);
    auto top = static_cast<int64_t>(uniformBelow(rng, positions));
    auto left = static_cast<int64_t>(uniformBelow(rng, positions));
    scratch.assign(sample.begin(), sample.end());
    cropPadded(scratch, sample, shape, options.cropPadding, top, left);
  }
}

} // namespace kiln::data
