// nn::Conv2D.
#include "frontend/nn/Conv2D.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

Conv2D::Conv2D(Conv2DConfig config) : ConfiguredLayer("conv2d", std::move(config)) {}

Conv2D::Conv2D(int64_t filters, std::array<int64_t, 2> kernel, Activation activation,
               Padding padding, std::array<int64_t, 2> stride, Layout layout, std::string name)
    : Conv2D(Conv2DConfig{.filters = filters,
                          .kernel = kernel,
                          .stride = stride,
                          .padding = padding,
                          .activation = activation,
                          .layout = layout,
                          .name = std::move(name)}) {}

Tensor Conv2D::forward(Graph &graph, Tensor x, const std::source_location &loc) {
  const Conv2DConfig &c = config_;
  bool nhwc = c.layout == Layout::NHWC;
  if (c.filters <= 0 || c.groups <= 0 || c.kernel[0] <= 0 || c.kernel[1] <= 0)
    return fail(graph,
                fmt::format("filters ({}), groups ({}) and kernel ([{}, {}]) must be positive",
                            c.filters, c.groups, c.kernel[0], c.kernel[1]),
                loc);
  if (x.rank() != 4)
    return fail(
        graph,
        fmt::format("input must be 4-D {}, got {}", nhwc ? "[N,H,W,C]" : "[N,C,H,W]", x.str()), loc,
        ErrorCode::ShapeMismatch);
  int64_t channels = x.dim(nhwc ? 3 : 1);
  if (channels % c.groups != 0 || c.filters % c.groups != 0)
    return fail(graph,
                fmt::format("groups = {} must divide the input channels ({}, input {}) and the "
                            "filters ({})",
                            c.groups, channels, x.str(), c.filters),
                loc, ErrorCode::ShapeMismatch);
  int64_t perGroup = channels / c.groups;
  Shape filterShape = nhwc ? Shape{c.filters, c.kernel[0], c.kernel[1], perGroup}
                           : Shape{c.filters, perGroup, c.kernel[0], c.kernel[1]};
  DType dtype = paramDType(x);
  Fans fans = convFans(filterShape, c.layout);
  Tensor filter = weight(graph, "weight", filterShape, dtype, c.kernelInitializer, fans, loc);
  Tensor y = conv2d(x, filter,
                    {.stride = c.stride,
                     .padding = c.padding,
                     .dilation = c.dilation,
                     .groups = c.groups,
                     .layout = c.layout},
                    loc);
  if (c.useBias) {
    Tensor bias = weight(graph, "bias", {c.filters}, dtype, c.biasInitializer, fans, loc);
    // [F] broadcasts against nhwc's trailing channel axis directly; nchw
    // needs it as [F, 1, 1].
    y = add(y, nhwc ? bias : reshape(bias, {c.filters, 1, 1}, loc), loc);
  }
  return applyActivation(y, c.activation, loc);
}

} // namespace kiln::nn
