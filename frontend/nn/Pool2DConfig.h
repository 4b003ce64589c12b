// The configuration shared by the pooling layers (MaxPool2D, AvgPool2D).
#pragma once

#include "frontend/Ops.h"

#include <array>
#include <string>

namespace kiln::nn {

struct Pool2DConfig {
  std::array<int64_t, 2> pool = {2, 2};
  /// {0, 0}: equal to `pool`, as in Keras.
  std::array<int64_t, 2> stride = {0, 0};
  Padding padding = Padding::valid();
  Layout layout = Layout::NCHW;
  /// AvgPool2D only: divide by the whole window, padding included (as PyTorch).
  bool countIncludePad = true;
  /// Output size rounded up, as PyTorch's ceil_mode (Pool2DOptions::ceilMode).
  bool ceilMode = false;
  std::string name = {};

  Pool2DOptions options() const {
    return {.kernel = pool,
            .stride = stride,
            .padding = padding,
            .layout = layout,
            .countIncludePad = countIncludePad,
            .ceilMode = ceilMode};
  }
};

} // namespace kiln::nn
