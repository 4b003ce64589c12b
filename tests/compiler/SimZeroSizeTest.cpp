// Every op with an empty operand, on the CPU and the simulator (tests/gpu runs
// the same graph on a GPU): the every-op graph with a batch of 0. Groups whose
// result is empty launch no kernel (a GPU kernel with an empty thread nest is
// not one); the reductions over the empty batch still give their identities.
#include "CompileTestUtil.h"
#include "EveryOpGraph.h"

namespace kiln::test {
namespace {

TEST_CASE("every op with an empty batch compiles, runs and matches the reference",
          "[compiler][zero-size]") {
  TargetKind target = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  INFO("target " << (target == TargetKind::Cpu ? "cpu" : "sim"));
  CompileCase c("every_op_empty_batch");
  buildEveryOpGraph(c, 0);
  CompileOptions options;
  options.target = target;
  CompileReport report;
  NamedTensors outputs = c.check(options, &report);
  REQUIRE(outputs.count("reduce_sum") == 1);
  CHECK(outputs.at("reduce_sum").typeStr() == "f32[3,9]"); // zeros: a sum over the empty batch
  CHECK(outputs.at("attention").typeStr() == "f32[0,9,9]");
  // Only the groups with elements are kernels: the batch reduction, the
  // leaves and the parameter-only ones; every other group is empty.
  CHECK(report.numKernels < report.numGroups);
}

TEST_CASE("zero-size matmul, softmax, pooling and broadcast on every target",
          "[compiler][zero-size]") {
  TargetKind target = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  INFO("target " << (target == TargetKind::Cpu ? "cpu" : "sim"));
  CompileOptions options;
  options.target = target;
  SECTION("matmul with an empty M, and one with K = 0 (a result of zeros)") {
    CompileCase c("matmul");
    Tensor w = c.param("w", {5, 4});
    c.output("empty_m", relu(matmul(c.input("x", {0, 5}), w)));
    c.output("k0", matmul(c.input("a", {3, 0}), c.param("b", {0, 4})) + 1.0);
    c.check(options);
  }
  SECTION("rows of zero width and zero rows") {
    CompileCase c("rows");
    c.output("softmax_no_rows", softmax(c.input("x", {0, 7}), 1));
    Tensor g = c.param("g", {0}), b = c.param("b", {0});
    c.output("layer_norm_no_columns", layerNorm(c.input("y", {3, 0}), g, b));
    c.output("sum_of_nothing", reduceSum(c.input("z", {4, 0}), {1}));
    c.check(options);
  }
  SECTION("pooling, convolution and movement of empty batches") {
    CompileCase c("windows");
    Tensor x = c.input("x", {0, 2, 6, 6});
    c.output("pool", maxPool2d(x));
    c.output("conv", conv2d(x, c.param("w", {3, 2, 3, 3})));
    c.output("broadcast", broadcastTo(c.input("row", {1, 5}), {0, 5}));
    c.output("slice", slice(c.input("s", {4, 5}), {2, 0}, {2, 5}));
    c.check(options);
  }
}

} // namespace
} // namespace kiln::test
