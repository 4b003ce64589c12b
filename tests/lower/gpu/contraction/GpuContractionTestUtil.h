// Helpers for GPU contraction tests: lower a graph's one Contraction group for a GPU target,
// check its launch structure, run it on the SIMT simulator with a poisoned output, and compare
// with the reference interpreter (tolerances of the CPU contraction tests).
#pragma once

#include "GpuAssemblyCheck.h"
#include "ir/kernel/GpuLaunch.h"
#include "lower/contraction/ContractionTestUtil.h"
#include "passes/lower/LowerUtil.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuGemmSchedule.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/Lower.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"
#include "runtime/sim/Simulator.h"

namespace kiln::test {

/// The GPU every GPU contraction test lowers for (the H100 figures: 48 KiB static shared
/// memory per block, 1024 threads).
inline const codegen::GpuTarget &gpuTestTarget() {
  static const codegen::GpuTarget target = *codegen::gpuTargetNamed("sm_90a");
  return target;
}

/// The GEMM schedule inside a GPU contraction schedule.
inline lower::GpuMatMulSchedule gemmOf(const lower::Schedule &schedule) {
  if (const auto *conv = std::get_if<lower::GpuConv2DSchedule>(&schedule))
    return conv->gemm;
  return std::get<lower::GpuMatMulSchedule>(schedule);
}

/// A GPU GEMM schedule from its fields.
inline lower::GpuMatMulSchedule gpuGemm(int blockM, int blockN, int blockK, int threadM,
                                        int threadN, int stages, int vectorWidth = 4) {
  lower::GpuMatMulSchedule s;
  s.blockM = blockM;
  s.blockN = blockN;
  s.blockK = blockK;
  s.threadM = threadM;
  s.threadN = threadN;
  s.stages = stages;
  s.vectorWidth = vectorWidth;
  return s;
}

/// Small GPU tiles: every grid axis and the K loop run several times at the test sizes.
inline lower::GpuMatMulSchedule smallTiles(int stages) { return gpuGemm(32, 32, 8, 2, 2, stages); }

/// A tensor-core GEMM schedule from its fields (vectorWidth: elements per async copy).
inline lower::GpuMatMulSchedule mmaTiles(int blockM, int blockN, int blockK, int warpM, int warpN,
                                         int stages, int vectorWidth = 8) {
  lower::GpuMatMulSchedule s;
  s.blockM = blockM;
  s.blockN = blockN;
  s.blockK = blockK;
  s.warpM = warpM;
  s.warpN = warpN;
  s.threadM = s.threadN = 0;
  s.stages = stages;
  s.vectorWidth = vectorWidth;
  return s;
}

/// tf32 keeps 10 explicit mantissa bits: each rounded operand is off by up to 2^-11 of itself,
/// a product by 2^-10. The f32 bound of checkClose (4 k 2^-24 per unit of scale) covers that
/// with a scale of 2^13.
inline constexpr double kTf32Scale = 8192.0;

/// Lowers the group with `schedule` (the default when empty) and checks the launch structure
/// against the schedule: one block per output tile, (blockM/threadM)(blockN/threadN) threads,
/// the shared tiles of every stage.
inline lower::LoweredKernel lowerGpuContraction(GraphCase &c, const passes::FusionGroup &group,
                                                const lower::Schedule &schedule) {
  const codegen::GpuTarget &target = gpuTestTarget();
  auto lowered = lower::lowerGroup(c.graph(), group, schedule, target);
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  auto launch = kir::gpuLaunchOf(lowered->kernel, target.maxThreadsPerBlock);
  INFO((launch ? std::string() : launch.error().str()));
  REQUIRE(launch);
  lower::GpuMatMulSchedule gemm = gemmOf(schedule);
  lower::GemmShape shape = lower::gpuContractionGemmShape(group);
  bool empty = shape.batch * shape.m * shape.n == 0;
  if (gemm.tensorCores()) {
    // An mma kernel's operands stay in their own dtype (tf32: f32) in shared memory.
    if (!empty) {
      CHECK(launch->threadsPerBlock() == lower::gpuMmaThreads(gemm));
      CHECK(launch->sharedBytes == lower::gpuMmaSharedBytes(gemm, shape.operandDtype));
    }
  } else {
    CHECK(launch->threadsPerBlock() == lower::gpuGemmThreads(gemm));
    if (!empty)
      CHECK(launch->sharedBytes == lower::gpuGemmSharedBytes(gemm, shape.accumulate));
  }
  if (!empty) {
    // Split-K: a block per (split, tile), then one kernel that sums the splits' partials. A
    // persistent grid: as many blocks as the SMs hold, each walking tiles.
    int64_t tiles = shape.batch * gemm.splitK * lower::ceilDiv(shape.m, gemm.blockM) *
                    lower::ceilDiv(shape.n, gemm.blockN);
    CHECK(launch->numBlocks() ==
          (gemm.persistent
               ? lower::persistentGridBlocks(gemm, shape.operandDtype, tiles, target)
               : tiles));
    CHECK(lowered->followUps.size() == (gemm.splitK > 1 ? 1u : 0u));
    CHECK(lowered->numWorkspaces == (gemm.splitK > 1 ? 1 : 0));
  }
  CHECK(launch->sharedLayoutBytes <= target.maxSharedBytesPerBlock());
  std::vector<kir::Kernel> kernels{lowered->kernel};
  for (const kir::Kernel &followUp : lowered->followUps) {
    auto followUpLaunch = kir::gpuLaunchOf(followUp, target.maxThreadsPerBlock);
    INFO((followUpLaunch ? std::string() : followUpLaunch.error().str()));
    CHECK(followUpLaunch);
    kernels.push_back(followUp);
  }
  bool isDefault = lower::scheduleStr(schedule) ==
                   lower::scheduleStr(lower::defaultSchedule(c.graph(), group, target));
  assembleOrBatch(kernels,
                  fmt::format("{} with {}", c.graph().name(), lower::scheduleStr(schedule)),
                  isDefault ? SpillPolicy::Fail : SpillPolicy::Candidate);
  return std::move(*lowered);
}

/// Runs a lowered GPU kernel and its follow-ups on the simulator with the group's inputs and a
/// poisoned output and workspaces.
inline Expected<HostTensor> simulateContraction(const lower::LoweredKernel &lowered,
                                                const passes::FusionGroup &group,
                                                const NamedTensors &inputs) {
  std::vector<HostTensor> buffers;
  for (const ir::Value *value : group.inputs) {
    auto it = inputs.find(value->name());
    REQUIRE(it != inputs.end());
    buffers.push_back(it->second);
  }
  const ir::TensorType &outType = group.root->type();
  buffers.emplace_back(outType.dtype, outType.shape);
  poison(buffers.back());
  size_t output = buffers.size() - 1;
  REQUIRE(lowered.kernel.params.size() == buffers.size() + size_t(lowered.numWorkspaces));
  for (int w = 0; w < lowered.numWorkspaces; ++w) {
    const kir::BufferPtr &param = lowered.kernel.params[buffers.size()];
    buffers.emplace_back(param->dtype, std::vector<int64_t>{param->size});
    poison(buffers.back());
  }
  KILN_TRY_VOID(sim::simulateKernel(lowered.kernel, buffers));
  for (const kir::Kernel &followUp : lowered.followUps)
    KILN_TRY_VOID(sim::simulateKernel(followUp, buffers));
  return std::move(buffers[output]);
}

/// Lowers the graph's contraction for the GPU with `schedule` (the default when empty), runs
/// it on the simulator and compares with the reference. `k` is the reduction length.
inline void checkGpuContraction(GraphCase &c, int64_t k, DType accumulate,
                                std::optional<lower::Schedule> schedule = std::nullopt,
                                double scale = 1.0) {
  PlannedContraction planned = planContraction(c.graph());
  lower::Schedule chosen =
      schedule ? *schedule
               : lower::defaultSchedule(c.graph(), *planned.group, gpuTestTarget());
  INFO("GPU schedule: " << lower::scheduleStr(chosen));
  lower::LoweredKernel lowered = lowerGpuContraction(c, *planned.group, chosen);
  auto got = simulateContraction(lowered, *planned.group, c.inputs());
  INFO((got ? std::string() : got.error().str()));
  REQUIRE(got);
  auto want = ir::interpret(c.graph(), c.inputs());
  REQUIRE(want);
  checkClose(*got, want->at("out"), k, accumulate, scale);
}

/// A bf16 x[m, k] @ w[k, n] lowered with `schedule` and assembled by ptxas through both
/// backends for the test target, failing on any spill (`what` names it); the kernels'
/// resources, for a caller that reports or bounds them.
inline std::vector<AssembledKernel> assembleMatMulWithoutSpills(
    int64_t m, int64_t k, int64_t n, const lower::GpuMatMulSchedule &schedule,
    const std::string &what) {
  INFO(what << ": " << lower::scheduleStr(lower::Schedule{schedule}));
  GraphCase c(3);
  ir::Value *x = c.input("x", DType::BF16, {m, k});
  ir::Value *w = c.input("w", DType::BF16, {k, n});
  c.output(c.node(ir::OpKind::MatMul, {x, w}, matmulAttrs()));
  PlannedContraction planned = planContraction(c.graph());
  REQUIRE(lower::checkGpuMmaSchedule(schedule, lower::gpuContractionGemmShape(*planned.group),
                                     gpuTestTarget()));
  auto lowered = lower::lowerGroup(c.graph(), *planned.group, schedule, gpuTestTarget());
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  // The default spill policy fails on any spill; the explicit check keeps it so.
  std::vector<AssembledKernel> assembled =
      checkGpuKernelsAssemble({lowered->kernel}, gpuTestTarget(), what);
  for (const AssembledKernel &kernel : assembled) {
    INFO(kernel.backend);
    CHECK(kernel.resources.spillStoreBytes == 0);
  }
  return assembled;
}

} // namespace kiln::test
