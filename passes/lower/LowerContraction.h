// CPU lowering and schedules of contraction groups (matmul, conv2d with their
// fused epilogues): the Contraction entry of the CPU lowering table
// (CpuLoweringTable.cpp). LowerContraction.cpp holds the one contraction
// lowering, with this CPU binding and the GPU one (gpu/GpuContraction.h).
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

#include <vector>

namespace kiln::lower {

/// Lowers a Contraction group with a MatMulSchedule or Conv2DSchedule.
Expected<LoweredKernel> lowerContractionForCpu(const ir::Graph &, const passes::FusionGroup &,
                                               const Schedule &, const codegen::CpuTarget &);

/// The heuristic schedule of a Contraction group.
Schedule defaultContractionSchedule(const ir::Graph &, const passes::FusionGroup &,
                                    const codegen::CpuTarget &);

/// Every legal schedule of a Contraction group (the default among them).
std::vector<Schedule> contractionScheduleSpace(const ir::Graph &, const passes::FusionGroup &,
                                               const codegen::CpuTarget &);

} // namespace kiln::lower
