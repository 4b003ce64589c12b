// Resolution of "same" and "valid" padding into explicit pads.
#include "frontend/Padding.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

const char *layoutName(Layout layout) { return layout == Layout::NHWC ? "nhwc" : "nchw"; }

AxisPadding samePadding(int64_t input, int64_t kernel, int64_t stride, int64_t dilation) {
  if (input <= 0 || kernel <= 0 || stride <= 0 || dilation <= 0)
    return {}; // Bad sizes: shape inference reports them with the op's context.
  int64_t outputSize = (input + stride - 1) / stride;
  int64_t total =
      std::max<int64_t>((outputSize - 1) * stride + (kernel - 1) * dilation + 1 - input, 0);
  return {total / 2, total - total / 2};
}

std::array<int64_t, 4> Padding::resolve(std::array<int64_t, 2> inputHW,
                                        std::array<int64_t, 2> kernel,
                                        std::array<int64_t, 2> stride,
                                        std::array<int64_t, 2> dilation) const {
  switch (kind_) {
  case Kind::Valid: return {0, 0, 0, 0};
  case Kind::Explicit: return pads_;
  case Kind::Same: {
    AxisPadding h = samePadding(inputHW[0], kernel[0], stride[0], dilation[0]);
    AxisPadding w = samePadding(inputHW[1], kernel[1], stride[1], dilation[1]);
    return {h.before, h.after, w.before, w.after};
  }
  }
  return pads_;
}

std::string Padding::str() const {
  switch (kind_) {
  case Kind::Valid: return "valid";
  case Kind::Same: return "same";
  case Kind::Explicit: break;
  }
  return fmt::format("[{}, {}, {}, {}]", pads_[0], pads_[1], pads_[2], pads_[3]);
}

} // namespace kiln
