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

TEST_CASE("two deep 3x3 convolutions in a row run as NHWC Winograd", "[compiler][winograd]") {
  // The CPU's layout takes convolutions that feed one another ("layout-cpu") and the rewrite
  // takes them in NHWC; with the layout off, both are NCHW Winograd; with the rewrite off,
  // both run the NHWC direct kernel.
  CompileCase c("winograd_chain");
  Tensor x = c.input("x", {1, 256, 21, 23});
  Tensor w1 = c.param("w1", {256, 256, 3, 3});
  Tensor w2 = c.param("w2", {256, 256, 3, 3});
  Conv2DOptions options;
  options.padding = Padding::symmetric(1, 1);
  c.output("y", conv2d(relu(conv2d(x, w1, options)), w2, options));
  NamedTensors expected = c.reference();
  auto compileAndDump = [&](CompileOptions options, CompileReport &report) {
    std::ostringstream dump;
    options.dump = kDumpFused;
    options.dumpStream = &dump;
    c.check(options, &report, &expected);
    return dump.str();
  };
  CompileReport report;
  std::string nhwc = compileAndDump({}, report);
  INFO(nhwc);
  CHECK(nhwc.find("gather") != std::string::npos); // the transforms
  CHECK(nhwc.find("conv2d direct") == std::string::npos);
  // Per convolution a filter transform (its two kernels: the taps' transpose, the matmul), an
  // input transform, the batched matmul and an output transform; the first's relu ends its
  // output transform, not recomputed by every gather of the second's input transform
  // (fusion's gathered-read rule). The transposes into NHWC and back are data movement: they
  // join the first input transform and the last output transform.
  CHECK(report.numKernels - report.numPreludeKernels == 10);
  CHECK(nhwc.find("ops=[transpose]") == std::string::npos);
  CompileOptions nchw;
  nchw.cpuNhwc = false;
  std::string nchwDump = compileAndDump(nchw, report);
  CHECK(nchwDump.find("gather") != std::string::npos);
  CHECK(nchwDump.find("ops=[transpose]") == std::string::npos);
  CompileOptions direct;
  direct.winograd = false;
  std::string directDump = compileAndDump(direct, report);
  CHECK(directDump.find("conv2d direct") != std::string::npos);
  CHECK(directDump.find("gather") == std::string::npos);
}

} // namespace kiln::test
