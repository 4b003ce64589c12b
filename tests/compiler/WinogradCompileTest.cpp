// compile() for the CPU runs a deep 3x3 convolution as Winograd (docs/winograd.md): its
// kernels, and the values against the fp64 reference with the conv's epilogue fused.
#include "CompileTestUtil.h"

#include <fmt/format.h>

#include <sstream>

namespace kiln::test {
namespace {

/// conv2d(x, w) + b, relu on 256 channels in and out, odd sizes (partial tiles), at least 400
/// output pixels (docs/winograd.md).
void buildDeepConv(CompileCase &c, int64_t batch) {
  Tensor x = c.input("x", batch == 1 ? std::vector<int64_t>{1, 256, 23, 19}
                                     : std::vector<int64_t>{batch, 256, 17, 13});
  Tensor w = c.param("w", {256, 256, 3, 3});
  Tensor b = c.param("b", {256, 1, 1});
  Conv2DOptions options;
  options.padding = Padding::symmetric(1, 1);
  c.output("y", relu(conv2d(x, w, options) + b));
}

} // namespace

TEST_CASE("the CPU compiles a deep 3x3 convolution as Winograd", "[compiler][winograd]") {
  int64_t batch = GENERATE(1, 2);
  INFO("batch " << batch);
  CompileCase c(fmt::format("winograd_b{}", batch));
  buildDeepConv(c, batch);
  NamedTensors expected = c.reference();
  // Kept NCHW (the CPU's NHWC layout off): the filter transform, the input transform, the
  // batched matmul and the output transform with the bias and relu.
  CompileOptions nchw;
  nchw.cpuNhwc = false;
  CompileReport report;
  c.check(nchw, &report, &expected);
  CHECK(report.numKernels == 4);
  CompileOptions direct = nchw;
  direct.winograd = false;
  c.check(direct, &report, &expected);
  CHECK(report.numKernels == 1);
  // By default the convolution runs as NHWC, which the rewrite leaves alone: one direct kernel
  // with the bias and relu, between the transposes of the input, the filter and the result.
  std::ostringstream dump;
  CompileOptions byDefault;
  byDefault.dump = kDumpFused;
  byDefault.dumpStream = &dump;
  c.check(byDefault, &report, &expected);
  CHECK(report.numKernels == 4);
  CHECK(dump.str().find("conv2d direct") != std::string::npos);
}

} // namespace kiln::test
