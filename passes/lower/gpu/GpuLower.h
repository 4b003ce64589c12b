// GPU lowering: (fusion group, GPU schedule, GPU target) -> kernel IR with
// block/thread loops, shared memory, barriers and warp shuffles; the GPU
// schedule defaults and spaces. The kernels run on the SIMT simulator and
// compile through both GPU backends (NVPTX, CUDA C).
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

#include <vector>

namespace kiln::lower {

/// Lowers one group (any kind but Alias and Constant) for `target`. The kernel
/// has LoweredKernel's parameter order (inputs, output, workspaces) and passes
/// kir::gpuLaunchOf. A schedule of another kind, or a CPU schedule, is an error
/// naming the group.
Expected<LoweredKernel> lowerGroupForGpu(const ir::Graph &graph, const passes::FusionGroup &group,
                                         const Schedule &schedule,
                                         const codegen::GpuTarget &target);

/// A good GPU schedule for `group` on `target` without running anything.
Schedule defaultGpuSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                            const codegen::GpuTarget &target);

/// Every legal GPU schedule for `group` on `target`, the default first.
std::vector<Schedule> gpuScheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target);

} // namespace kiln::lower
