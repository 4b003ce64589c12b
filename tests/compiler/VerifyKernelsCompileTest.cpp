// CompileOptions::verifyKernels: one compile verifies its kernels whatever the process setting.
#include "CompileTestUtil.h"

#include "passes/kernel/Passes.h"

namespace kiln::test {
namespace {

/// Turns the process-wide setting off for the test and back on after it (the tests run with
/// it on, tests/TestMain.cpp).
struct ProcessVerificationOff {
  ProcessVerificationOff() { kir::setVerifyKernelPasses(false); }
  ~ProcessVerificationOff() { kir::setVerifyKernelPasses(true); }
};

TEST_CASE("CompileOptions::verifyKernels verifies every lowered kernel after every kernel pass",
          "[compiler]") {
  Graph graph("dense");
  Tensor x = graph.input("x", {3, 5});
  Tensor w = graph.input("w", {5, 4});
  graph.output("y", relu(matmul(x, w)) * 2.0f);
  REQUIRE(graph.finalize());

  ProcessVerificationOff off;
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.useKernelCache = false;
  CHECK_FALSE(options.verifyKernels); // its default is the process setting

  CompileReport report;
  uint64_t before = kir::kernelPassVerifications();
  REQUIRE(compile(graph.ir(), options, &report));
  CHECK(kir::kernelPassVerifications() == before);
  REQUIRE(report.numKernels > 0);

  options.verifyKernels = true;
  before = kir::kernelPassVerifications();
  REQUIRE(compile(graph.ir(), options, &report));
  // Each kernel as lowered, then after simplify, hoist and the second simplify.
  CHECK(kir::kernelPassVerifications() - before == 4 * static_cast<uint64_t>(report.numKernels));
}

} // namespace
} // namespace kiln::test
