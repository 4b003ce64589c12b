// End-to-end tests of the row kernels and normalizations: softmax and
// log_softmax on last and non-last axes, layer_norm over one and two trailing
// axes, inference batch_norm in both layouts, for every float dtype.
#include "CompileTestUtil.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

TEST_CASE("softmax and log_softmax on last and non-last axes for every float dtype",
          "[compiler]") {
  DType dtype = GENERATE_COPY(from_range(kFloatTypes));
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("softmax_{}", dtypeName(dtype)));
  // Scaled logits so the max subtraction matters (exp(40) overflows f16).
  Tensor x = c.input("x", {3, 17, 33}, dtype, Values::uniform(-40, 40));
  for (int64_t axis : {-1, 1, 0}) {
    c.output(fmt::format("softmax.axis{}", axis), softmax(x, axis));
    c.output(fmt::format("log_softmax.axis{}", axis), logSoftmax(x, axis));
  }
  // Rows of one element, below and above the vector widths, and a long row.
  for (int64_t n : {1, 7, 65, 1024}) {
    Tensor row = c.input(fmt::format("row{}", n), {5, n}, dtype);
    c.output(fmt::format("softmax.row{}", n), softmax(row));
    c.output(fmt::format("log_softmax.row{}", n), logSoftmax(row));
  }
  c.check();
}

TEST_CASE("layer_norm over one and two trailing axes for every float dtype", "[compiler]") {
  DType dtype = GENERATE_COPY(from_range(kFloatTypes));
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("layer_norm_{}", dtypeName(dtype)));
  // A mean far from zero, so a one-pass variance would cancel badly.
  Tensor x = c.input("x", {4, 9, 65}, dtype, Values::uniform(2, 6));
  Tensor scale = c.param("scale", {65}, dtype);
  Tensor bias = c.param("bias", {65}, dtype);
  c.output("layer_norm.last", layerNorm(x, scale, bias));
  Tensor scale2 = c.param("scale2", {9, 65}, dtype);
  Tensor bias2 = c.param("bias2", {9, 65}, dtype);
  c.output("layer_norm.last_two", layerNorm(x, scale2, bias2, -2, 1e-3));
  for (int64_t n : {1, 3, 256, 257}) {
    Tensor row = c.input(fmt::format("row{}", n), {6, n}, dtype);
    Tensor s = c.param(fmt::format("s{}", n), {n}, dtype);
    Tensor b = c.param(fmt::format("b{}", n), {n}, dtype);
    c.output(fmt::format("layer_norm.row{}", n), layerNorm(row, s, b));
  }
  c.check();
}

TEST_CASE("batch_norm per channel in both layouts for every float dtype", "[compiler]") {
  DType dtype = GENERATE_COPY(from_range(kFloatTypes));
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("batch_norm_{}", dtypeName(dtype)));
  for (int64_t channels : {3, 17}) {
    Tensor scale = c.param(fmt::format("scale{}", channels), {channels}, dtype);
    Tensor bias = c.param(fmt::format("bias{}", channels), {channels}, dtype);
    Tensor mean = c.param(fmt::format("mean{}", channels), {channels}, dtype);
    Tensor var = c.param(fmt::format("var{}", channels), {channels}, dtype, Values::positive(0.1, 3));
    Tensor nchw = c.input(fmt::format("nchw{}", channels), {2, channels, 5, 7}, dtype);
    c.output(fmt::format("batch_norm.nchw.c{}", channels),
             batchNorm(nchw, scale, bias, mean, var));
    Tensor nhwc = c.input(fmt::format("nhwc{}", channels), {2, 5, 7, channels}, dtype);
    c.output(fmt::format("batch_norm.nhwc.c{}", channels),
             batchNorm(nhwc, scale, bias, mean, var, -1, 1e-3));
  }
  c.check();
}

} // namespace
} // namespace kiln::test
