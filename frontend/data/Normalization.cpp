// Per-channel normalization and the statistics it needs.
#include "frontend/data/Normalization.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln::data {

void normalizeSample(std::span<float> sample, ImageShape shape, const Normalization &normalization) {
  KILN_CHECK(static_cast<int64_t>(normalization.mean.size()) == shape.channels &&
                 static_cast<int64_t>(normalization.stddev.size()) == shape.channels,
             "normalizeSample: not one mean and one stddev per channel");
  int64_t plane = shape.height * shape.width;
  for (int64_t c = 0; c < shape.channels; ++c) {
    double mean = normalization.mean[static_cast<size_t>(c)];
    double scale = 1.0 / normalization.stddev[static_cast<size_t>(c)];
    for (float &value : sample.subspan(static_cast<size_t>(c * plane), static_cast<size_t>(plane)))
      value = static_cast<float>((static_cast<double>(value) - mean) * scale);
  }
}

Expected<Normalization> channelStatistics(const HostTensor &images) {
  if (images.dtype() != DType::F32 || images.rank() != 4)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("channel statistics need f32 images [N, C, H, W], got {}",
                                 images.typeStr()));
  const auto &shape = images.shape();
  int64_t count = shape[0], channels = shape[1], plane = shape[2] * shape[3];
  if (count * plane == 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("channel statistics of {}: there are no pixels", images.typeStr()));
  std::span<const float> values = images.as<float>();
  Normalization result;
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0, sumSquares = 0;
    for (int64_t n = 0; n < count; ++n)
      for (float value : values.subspan(static_cast<size_t>((n * channels + c) * plane),
                                        static_cast<size_t>(plane))) {
        sum += value;
        sumSquares += static_cast<double>(value) * value;
      }
    double pixels = static_cast<double>(count * plane);
    double mean = sum / pixels;
    result.mean.push_back(mean);
    result.stddev.push_back(std::sqrt(std::max(0.0, sumSquares / pixels - mean * mean)));
  }
  return result;
}

} // namespace kiln::data
