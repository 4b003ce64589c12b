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
  // The filter transform, the input transform, the batched matmul and the output transform
  // with the bias and relu (besides the preludes that pack a weight once).
  CompileReport report;
  c.check({}, &report, &expected);
  CHECK(report.numKernels - report.numPreludeKernels == 4);
  CompileOptions direct;
  direct.winograd = false;
  c.check(direct, &report, &expected);
  CHECK(report.numKernels - report.numPreludeKernels == 1);
}

} // namespace kiln::test

namespace kiln::test {

TEST_CASE("two deep 3x3 convolutions in a row run as NHWC, not Winograd", "[compiler][winograd]") {
  // The CPU's layout takes convolutions that feed one another ("layout-cpu"); the rewrite
  // only sees the NCHW ones it leaves. With the layout off, both are Winograd again.
  CompileCase c("winograd_chain");
  Tensor x = c.input("x", {1, 256, 21, 23});
  Tensor w1 = c.param("w1", {256, 256, 3, 3});
  Tensor w2 = c.param("w2", {256, 256, 3, 3});
  Conv2DOptions options;
  options.padding = Padding::symmetric(1, 1);
  c.output("y", conv2d(relu(conv2d(x, w1, options)), w2, options));
  NamedTensors expected = c.reference();
  std::ostringstream dump;
  CompileOptions byDefault;
  byDefault.dump = kDumpFused;
  byDefault.dumpStream = &dump;
  CompileReport report;
  c.check(byDefault, &report, &expected);
  INFO(dump.str());
  CHECK(dump.str().find("ops=[transpose]") != std::string::npos); // into NHWC and back
  CHECK(dump.str().find("conv2d direct") != std::string::npos);
  CHECK(dump.str().find("gather") == std::string::npos); // no Winograd input transform
  CompileOptions nchw;
  nchw.cpuNhwc = false;
  std::ostringstream nchwDump;
  nchw.dump = kDumpFused;
  nchw.dumpStream = &nchwDump;
  c.check(nchw, &report, &expected);
  CHECK(nchwDump.str().find("gather") != std::string::npos);
  CHECK(nchwDump.str().find("conv2d direct") == std::string::npos);
}

} // namespace kiln::test
