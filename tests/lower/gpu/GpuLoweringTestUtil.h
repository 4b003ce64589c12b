// Checks of GPU-lowered groups on the SIMT simulator: every output of a
// LoweringCase against the reference with the default GPU schedules and with
// stress schedules (grid-stride loops, tiny tiles, rows split across two warps
// and over a few lanes), every schedule of a group's space, and the launch
// structure of every kernel.
#pragma once

#include "lower/LoweringTestUtil.h"

#include "GpuAssemblyCheck.h"

#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/Printer.h"
#include "passes/lower/Lower.h"

#include <algorithm>

namespace kiln::test {

inline codegen::GpuTarget testGpuTarget() {
  auto target = codegen::gpuTargetNamed("sm_90a");
  REQUIRE(target);
  return *target;
}

/// Whether a row-parallel group (reduction or row norm) runs rows, not a thread per column.
inline bool runsRows(const passes::FusionGroup &group) {
  const ir::Node &anchor = *group.anchor;
  const ir::Shape &shape = anchor.operand(0)->type().shape;
  if (group.kind == passes::GroupKind::Reduction)
    return shape.empty() || lower::planReduction(anchor).reduced.back();
  if (anchor.kind() == ir::OpKind::LayerNorm)
    return true;
  int64_t axis = ir::getInt(anchor.attrs(), "axis");
  if (axis < 0)
    axis += static_cast<int64_t>(shape.size());
  return lower::product(std::span(shape).subspan(static_cast<size_t>(axis) + 1)) == 1;
}

/// GPU schedules that take the unusual paths: a grid capped at one block per
/// SM with three vectors per thread, 8 x 8 transpose tiles of two thread rows,
/// and rows of `rowThreads` threads (64: two warps through shared memory; 4:
/// eight rows per warp) with `rowsPerBlock` rows per block.
inline GpuScheduleChooser gpuStress(int rowThreads, int rowsPerBlock) {
  return [=](const ir::Graph &graph, const passes::FusionGroup &group,
             const codegen::GpuTarget &target) -> lower::Schedule {
    lower::Schedule chosen = lower::defaultSchedule(graph, group, target);
    switch (group.kind) {
    case passes::GroupKind::Pointwise:
      if (std::holds_alternative<lower::GpuTransposeSchedule>(chosen))
        return lower::GpuTransposeSchedule{.tile = 8, .rowsPerPass = 2};
      if (auto *p = std::get_if<lower::GpuPointwiseSchedule>(&chosen))
        return lower::GpuPointwiseSchedule{.threadsPerBlock = 32, .vectorWidth = p->vectorWidth,
                                           .elementsPerThread = 3, .maxBlocksPerSm = 1};
      return chosen;
    case passes::GroupKind::Reduction:
      if (!runsRows(group))
        return lower::GpuReductionSchedule{.threadsPerBlock = 32, .rowsPerBlock = 1};
      return lower::GpuReductionSchedule{.threadsPerBlock = rowThreads * rowsPerBlock, .rowsPerBlock = rowsPerBlock};
    case passes::GroupKind::RowNorm:
      if (!runsRows(group))
        return lower::GpuRowNormSchedule{.threadsPerBlock = 32, .rowsPerBlock = 1};
      return lower::GpuRowNormSchedule{.threadsPerBlock = rowThreads * rowsPerBlock, .rowsPerBlock = rowsPerBlock};
    case passes::GroupKind::Pooling: return lower::GpuPoolingSchedule{.threadsPerBlock = 32};
    default: return chosen;
    }
  };
}

/// Every kernel's launch is well formed and its shared memory fits the target.
inline void checkLaunches(const std::vector<kir::Kernel> &kernels) {
  codegen::GpuTarget target = testGpuTarget();
  for (const kir::Kernel &kernel : kernels) {
    INFO("kernel:\n" << kir::printKernel(kernel));
    auto launch = kir::gpuLaunchOf(kernel, target.maxThreadsPerBlock);
    INFO((launch ? std::string() : launch.error().str()));
    REQUIRE(launch);
    CHECK(launch->sharedBytes <= target.staticSharedBytesPerBlock);
    CHECK(launch->threadsPerBlock() <= target.maxThreadsPerBlock);
  }
}

/// The case's outputs on the simulator with `chooser`'s GPU schedules (empty:
/// the defaults); the lowered kernels go to `kernels` when given.
inline NamedTensors runOnGpu(LoweringCase &c, const GpuScheduleChooser &chooser = {},
                             std::vector<kir::Kernel> *kernels = nullptr) {
  GroupRunOptions options;
  options.executor = Executor::Simulator;
  options.chooseGpuSchedule = chooser;
  options.loweredKernels = kernels;
  auto got = runLoweredGraph(c.graph(), c.inputs(), options);
  INFO((got ? std::string() : got.error().str()));
  REQUIRE(got);
  return std::move(*got);
}

/// Runs the case on the simulator with `chooser` and compares every output with `want`.
inline void compareOnGpu(LoweringCase &c, const NamedTensors &want, const GpuScheduleChooser &chooser,
                         double toleranceScale = 1.0) {
  std::vector<kir::Kernel> kernels;
  NamedTensors got = runOnGpu(c, chooser, &kernels);
  checkLaunches(kernels);
  for (const auto &[name, tensor] : want) {
    INFO("output " << name);
    std::string report = compareTensors(got.at(name), tensor, toleranceScale);
    std::string text;
    if (!report.empty())
      for (const kir::Kernel &kernel : kernels)
        text += kir::printKernel(kernel);
    INFO("kernels:\n" << text);
    CHECK(report == "");
  }
}

/// Every output on the simulator against the reference, with the default GPU
/// schedules and the stress schedules.
inline void checkGpu(LoweringCase &c, double toleranceScale = 1.0) {
  NamedTensors want = c.reference();
  INFO("graph:\n" << ir::printGraph(c.graph()));
  {
    INFO("default GPU schedules");
    compareOnGpu(c, want, {}, toleranceScale);
  }
  {
    INFO("stress: rows of two warps, two rows per block");
    compareOnGpu(c, want, gpuStress(64, 2), toleranceScale);
  }
  {
    INFO("stress: rows of four lanes, eight rows per block");
    compareOnGpu(c, want, gpuStress(4, 8), toleranceScale);
  }
}

/// Every schedule of every group's space (groups with smaller spaces repeat
/// their last one) on the simulator against the reference; returns the
/// largest space size seen.
inline size_t checkEveryGpuSchedule(LoweringCase &c, double toleranceScale = 1.0) {
  NamedTensors want = c.reference();
  codegen::GpuTarget target = testGpuTarget();
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  size_t largest = 0;
  for (const passes::FusionGroup &group : plan->groups)
    if (group.kind != passes::GroupKind::Constant && group.kind != passes::GroupKind::Alias)
      largest = std::max(largest, lower::scheduleSpace(c.graph(), group, target).size());
  for (size_t pick = 0; pick < largest; ++pick) {
    GpuScheduleChooser chooser = [pick](const ir::Graph &graph, const passes::FusionGroup &group,
                                        const codegen::GpuTarget &gpu) {
      std::vector<lower::Schedule> space = lower::scheduleSpace(graph, group, gpu);
      return space[std::min(pick, space.size() - 1)];
    };
    INFO("schedule #" << pick);
    compareOnGpu(c, want, chooser, toleranceScale);
  }
  return largest;
}

} // namespace kiln::test
