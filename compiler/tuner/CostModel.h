// The tuner's cost model: an analytical estimate of a candidate schedule's
// time, without compiling or running it (docs/tuning.md, "Cost model"). It
// only orders candidates, so a small tuning budget goes to the likely winners
// first; its seconds are not a prediction to report.
#pragma once

#include "compiler/Pipeline.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/Schedule.h"

#include <cstddef>
#include <span>
#include <vector>

namespace kiln::tuning {

/// Estimated seconds of one run of `group` with `schedule` on `target`. A
/// schedule of the other target's kind, or one that cannot fit the target
/// (too many threads, registers or shared memory), gets kInfeasibleSeconds.
double estimateSeconds(const ir::Graph &graph, const passes::FusionGroup &group,
                       const lower::Schedule &schedule, const compiler::LoweringTarget &target);

/// What an infeasible or foreign schedule is estimated at: after every real one.
inline constexpr double kInfeasibleSeconds = 1e9;

/// The CPU GEMM part: arithmetic over the cores' vector peak (register-tile
/// efficiency, padding of M and N to the register tile, the parallel split's
/// balance), slowed where the cache blocks overflow L1/L2/L3, plus packing
/// traffic, output passes per K block and fork-joins. `directConv`: the
/// micro-kernel reads the input in place (conv2d Direct).
double estimateCpuGemmSeconds(const lower::GemmShape &shape, const lower::MatMulSchedule &schedule,
                              const codegen::CpuTarget &target, bool directConv = false);

/// The GPU GEMM part: whole waves of resident blocks (occupancy from threads,
/// shared memory and registers), each computing its padded tile at the SM's
/// peak, scaled by latency hiding, operand reuse and pipelining.
double estimateGpuGemmSeconds(const lower::GemmShape &shape,
                              const lower::GpuMatMulSchedule &schedule,
                              const codegen::GpuTarget &target);

/// Indices of `candidates` from the smallest estimate to the largest; equal
/// estimates keep their order, so the ranking is total and deterministic.
std::vector<size_t> rankByCost(const ir::Graph &graph, const passes::FusionGroup &group,
                               std::span<const lower::Schedule> candidates,
                               const compiler::LoweringTarget &target);

} // namespace kiln::tuning
