// One contraction case list for every lowering target (testTargets()): a case builds its graph
// once and names, per target, the schedules that take its unusual paths; the CPU runs each
// through the host JIT (and the kernel IR evaluator where asked), the GPU on the SIMT
// simulator, its kernels through both GPU backends and ptxas (AssemblyBatch).
#pragma once

#include "lower/LoweringTestUtil.h"
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include <optional>
#include <vector>

namespace kiln::test {

/// The schedules of one case on each target; nullopt is the target's default schedule.
struct TargetSchedules {
  std::vector<std::optional<lower::Schedule>> cpu{std::nullopt};
  std::vector<std::optional<lower::Schedule>> sim{std::nullopt};
  std::vector<Runner> cpuRunners{Runner::Jit};
};

/// Checks the graph's contraction against the reference on every target of the run with each
/// of its schedules. `k` is the reduction length, for the float tolerance.
inline void checkOnTargets(GraphCase &c, int64_t k, DType accumulate,
                           const TargetSchedules &schedules = {}, double scale = 1.0) {
  for (TestTarget target : testTargets()) {
    INFO("target " << testTargetName(target));
    if (target == TestTarget::Sim) {
      for (const std::optional<lower::Schedule> &schedule : schedules.sim)
        checkGpuContraction(c, k, accumulate, schedule, scale);
      continue;
    }
    for (Runner runner : schedules.cpuRunners)
      for (const std::optional<lower::Schedule> &schedule : schedules.cpu)
        checkContraction(c, k, accumulate, runner, schedule, scale);
  }
}

} // namespace kiln::test
