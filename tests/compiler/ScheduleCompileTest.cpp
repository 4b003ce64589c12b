// End-to-end tests of the schedule hook (CompileOptions::chooseSchedule, what
// the autotuner drives): every schedule of every group's legal space, and a
// set of deliberately odd ones, must compute what the reference does.
#include "CompileTestUtil.h"

#include "codegen/Target.h"
#include "passes/lower/LowerKinds.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace kiln::test {
namespace {

/// One group of every kind: pointwise, transpose, column and row reductions,
/// row norms, pooling, matmul with an epilogue, conv in both layouts.
void buildEveryKind(CompileCase &c) {
  Tensor a = c.input("a", {33, 65});
  Tensor b = c.input("b", {65});
  c.output("pointwise", exp(a * 0.5) + b);
  c.output("transpose", transpose(a, {1, 0}) * 2.0);
  c.output("column_sum", reduceSum(a, {0}));
  c.output("row_max", reduceMax(a, {1}, true));
  c.output("softmax", softmax(a));
  c.output("layer_norm", layerNorm(a, c.param("g", {65}), c.param("beta", {65})));
  Tensor image = c.input("image", {2, 3, 17, 19});
  c.output("avg_pool", avgPool2d(image, {.kernel = {3, 3},
                                         .stride = {2, 2},
                                         .padding = Padding::symmetric(1, 1)}));
  Tensor w = c.param("w", {65, 40});
  c.output("dense", relu(matmul(a, w) + c.param("bias", {40})));
  Conv2DOptions same;
  same.padding = Padding::same();
  c.output("conv_nchw", relu(conv2d(image, c.param("f", {8, 3, 3, 3}), same)));
  Tensor imageNhwc = c.input("image_nhwc", {2, 17, 19, 5});
  same.layout = Layout::NHWC;
  same.stride = {2, 1};
  c.output("conv_nhwc", conv2d(imageNhwc, c.param("f_nhwc", {7, 3, 3, 5}), same));
}

TEST_CASE("every schedule of each group's space computes the same result", "[compiler]") {
  CompileCase c("schedule_space");
  buildEveryKind(c);
  REQUIRE(c.graph().finalize());
  codegen::CpuTarget target = codegen::hostCpuTarget();

  // Space sizes per group, from one compile that keeps the defaults.
  std::map<int, size_t> spaceSizes;
  CompileOptions probe;
  probe.chooseSchedule = [&](const ir::Graph &graph, const passes::FusionGroup &group) {
    spaceSizes[group.id] = lower::scheduleSpace(graph, group, target).size();
    return std::optional<lower::Schedule>{};
  };
  compileOrFail(c.graph().ir(), probe);
  REQUIRE(spaceSizes.size() >= 10);
  size_t largest = 0;
  for (auto [id, size] : spaceSizes) {
    INFO("group " << id);
    CHECK(size >= 1);
    largest = std::max(largest, size);
  }

  // Variant v takes entry v of each space (spread evenly over spaces larger
  // than the number of variants), so every entry of the small spaces and a
  // spread of the large ones is compiled.
  size_t variants = std::min<size_t>(largest, 12);
  NamedTensors expected = c.reference();
  for (size_t v = 0; v < variants; ++v) {
    CompileOptions options;
    options.chooseSchedule = [&, v](const ir::Graph &graph, const passes::FusionGroup &group) {
      auto space = lower::scheduleSpace(graph, group, target);
      size_t index = space.size() <= variants ? v % space.size() : v * space.size() / variants;
      return std::optional<lower::Schedule>(space[index]);
    };
    INFO("variant " << v << " of " << variants);
    c.check(options, nullptr, &expected);
  }
}

/// Odd parameters everywhere: 3-lane vectors, parallel loops for any size,
/// 5 x 5 transpose tiles, GEMM blocks that do not divide any dimension.
std::optional<lower::Schedule> oddSchedule(const ir::Graph &graph,
                                           const passes::FusionGroup &group,
                                           lower::MatMulSchedule::Parallel parallel,
                                           lower::Conv2DSchedule::Algorithm algorithm) {
  switch (group.kind) {
  case passes::GroupKind::Pointwise:
    if (lower::transposedAxis(group))
      return lower::TransposeSchedule{.tile = 5, .minParallelWork = 1};
    return lower::PointwiseSchedule{.vectorWidth = 3, .minParallelWork = 1};
  case passes::GroupKind::Reduction:
    return lower::ReductionSchedule{.vectorWidth = 3, .minParallelWork = 1};
  case passes::GroupKind::RowNorm:
    return lower::RowNormSchedule{.vectorWidth = 3, .minParallelWork = 1};
  case passes::GroupKind::Pooling:
    return lower::PoolingSchedule{.vectorWidth = 3, .minParallelWork = 1};
  case passes::GroupKind::Contraction: {
    lower::MatMulSchedule gemm{.mc = 12, .nc = 24, .kc = 5, .mr = 3, .nr = 8, .vectorWidth = 4,
                               .packA = true, .packB = true, .parallel = parallel};
    if (group.anchor->kind() == ir::OpKind::Conv2D)
      return lower::Conv2DSchedule{.algorithm = algorithm, .gemm = gemm, .ocBlock = 8};
    return gemm;
  }
  default: return lower::defaultSchedule(graph, group, codegen::hostCpuTarget());
  }
}

TEST_CASE("odd schedules (tiny tiles, odd vectors, parallel everywhere) compute the same result",
          "[compiler]") {
  using Parallel = lower::MatMulSchedule::Parallel;
  using Algorithm = lower::Conv2DSchedule::Algorithm;
  auto choice = GENERATE(std::pair{Parallel::Serial, Algorithm::Im2col},
                         std::pair{Parallel::Outer, Algorithm::Direct},
                         std::pair{Parallel::Inner, Algorithm::Im2col},
                         std::pair{Parallel::Inner, Algorithm::Direct});
  Parallel parallel = choice.first;
  Algorithm algorithm = choice.second;
  INFO("gemm parallel " << static_cast<int>(parallel) << ", conv algorithm "
                        << static_cast<int>(algorithm));
  CompileCase c("odd_schedules");
  buildEveryKind(c);
  CompileOptions options;
  options.chooseSchedule = [&](const ir::Graph &graph, const passes::FusionGroup &group) {
    return oddSchedule(graph, group, parallel, algorithm);
  };
  c.check(options);
}

} // namespace
} // namespace kiln::test
