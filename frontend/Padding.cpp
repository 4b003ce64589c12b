// Resolution of "same" and "valid" padding into explicit pads.
#include "frontend/Padding.h"

#include "ir/graph/TensorType.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

const char *layoutName(Layout layout) { return layout == Layout::NHWC ? "nhwc" : "nchw"; }

std::optional<AxisPadding> samePadding(int64_t input, int64_t kernel, int64_t stride,
                                       int64_t dilation) {
  if (input <= 0 || kernel <= 0 || stride <= 0 || dilation <= 0)
    return AxisPadding{}; // Bad sizes: shape inference reports them with the op's context.
  // ceil(input / stride) without input + stride - 1, which overflows for a
  // huge stride; (outputSize - 1) * stride < input cannot overflow.
  int64_t outputSize = input / stride + (input % stride != 0 ? 1 : 0);
  int64_t extent = 0; // (kernel - 1) * dilation + 1, the window's span
  if (__builtin_mul_overflow(kernel - 1, dilation, &extent) || extent >= ir::kMaxElements)
    return std::nullopt;
  ++extent;
  int64_t total = std::max<int64_t>((outputSize - 1) * stride + extent - input, 0);
  return AxisPadding{total / 2, total - total / 2};
}

Expected<std::array<int64_t, 4>> Padding::resolve(std::array<int64_t, 2> inputHW,
                                                  std::array<int64_t, 2> kernel,
                                                  std::array<int64_t, 2> stride,
                                                  std::array<int64_t, 2> dilation) const {
  switch (kind_) {
  case Kind::Valid: return std::array<int64_t, 4>{0, 0, 0, 0};
  case Kind::Explicit: return pads_;
  case Kind::Same: {
    std::array<int64_t, 4> pads{};
    for (size_t axis = 0; axis < 2; ++axis) {
      std::optional<AxisPadding> padding =
          samePadding(inputHW[axis], kernel[axis], stride[axis], dilation[axis]);
      if (!padding)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("\"same\" padding cannot be computed: along {} the window "
                                     "of {} with dilation {} spans more than 2^53 elements",
                                     axis == 0 ? "the height" : "the width", kernel[axis],
                                     dilation[axis]));
      pads[2 * axis] = padding->before;
      pads[2 * axis + 1] = padding->after;
    }
    return pads;
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
