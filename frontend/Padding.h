// Padding for convolution and pooling windows: "same", "valid" or explicit,
// resolved by the DSL into the explicit [top, bottom, left, right] the IR stores.
#pragma once

#include "support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

/// The memory layout of an image tensor: [N, C, H, W] or [N, H, W, C].
enum class Layout : uint8_t { NCHW, NHWC };

/// "nchw" or "nhwc": the IR's attribute spelling.
const char *layoutName(Layout layout);

/// Before/after padding of one spatial axis.
struct AxisPadding {
  int64_t before = 0;
  int64_t after = 0;
  bool operator==(const AxisPadding &) const = default;
};

/// TensorFlow's "same" rule for one axis: the output has ceil(input / stride)
/// elements; the total padding is
///   max((ceil(input / stride) - 1) * stride + (kernel - 1) * dilation + 1 - input, 0),
/// with the smaller half before and the odd element after. Sizes <= 0 give
/// no padding (shape inference reports them with the op's context); nullopt
/// when the window's extent (kernel - 1) * dilation + 1, and so the padding,
/// would exceed 2^53, the most any IR dimension or attribute may hold.
std::optional<AxisPadding> samePadding(int64_t input, int64_t kernel, int64_t stride,
                                       int64_t dilation = 1);

/// How a window op pads its input.
class Padding {
public:
  enum class Kind : uint8_t { Valid, Same, Explicit };

  /// No padding: windows only where they fit.
  static Padding valid() { return Padding(Kind::Valid, {0, 0, 0, 0}); }
  /// TensorFlow "same": output size ceil(input / stride) (see samePadding).
  static Padding same() { return Padding(Kind::Same, {0, 0, 0, 0}); }
  /// Explicit [top, bottom, left, right].
  static Padding explicitPads(int64_t top, int64_t bottom, int64_t left, int64_t right) {
    return Padding(Kind::Explicit, {top, bottom, left, right});
  }
  /// Explicit padding of `height` rows above and below and `width` columns left and right.
  static Padding symmetric(int64_t height, int64_t width) {
    return explicitPads(height, height, width, width);
  }

  Kind kind() const { return kind_; }

  /// [top, bottom, left, right] for an input of `inputHW` with the given
  /// window. InvalidArgument when "same" padding cannot be represented (see
  /// samePadding); the caller adds the op's name and location.
  Expected<std::array<int64_t, 4>> resolve(std::array<int64_t, 2> inputHW,
                                           std::array<int64_t, 2> kernel,
                                           std::array<int64_t, 2> stride,
                                           std::array<int64_t, 2> dilation = {1, 1}) const;

  /// "valid", "same" or "[t, b, l, r]".
  std::string str() const;

private:
  Padding(Kind kind, std::array<int64_t, 4> pads) : kind_(kind), pads_(pads) {}
  Kind kind_;
  std::array<int64_t, 4> pads_;
};

} // namespace kiln
