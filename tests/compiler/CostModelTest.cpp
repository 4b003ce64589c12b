// The tuner's cost model: deterministic properties only (whether it ranks the
// true winner first depends on the machine, so no test claims that).
#include "CompileTestUtil.h"

#include "compiler/Pipeline.h"
#include "compiler/tuner/CostModel.h"
#include "compiler/tuning/TuningKeys.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Schedule.h"
#include "passes/lower/Lower.h"
#include "passes/lower/gpu/GpuMmaSchedule.h"
#include "passes/lower/gpu/GpuWgmmaSchedule.h"

#include <algorithm>
#include <sstream>

namespace kiln::test {
namespace {

using lower::GemmShape;
using lower::MatMulSchedule;
using Parallel = MatMulSchedule::Parallel;

/// A target with known caches, so the test does not depend on this machine.
codegen::CpuTarget testTarget() {
  codegen::CpuTarget target = codegen::referenceCpuTarget();
  target.l1dBytes = 32 << 10;
  target.l2Bytes = 1 << 20;
  target.l3Bytes = 16 << 20;
  return target;
}

MatMulSchedule serialSchedule(int64_t mc, int64_t kc, int64_t nc) {
  MatMulSchedule s;
  s.mc = mc;
  s.kc = kc;
  s.nc = nc;
  s.mr = 6;
  s.nr = 16;
  s.vectorWidth = 8;
  s.parallel = Parallel::Serial;
  return s;
}

TEST_CASE("cost model: an A block that overflows L2 ranks below one that fits",
          "[compiler][costmodel]") {
  codegen::CpuTarget target = testTarget();
  GemmShape shape{1, 2048, 512, 1024, DType::F32};
  // 96 x 256 f32 is 96 KiB (fits 1 MiB); 2048 x 256 is 2 MiB (does not).
  double fits = tuning::estimateCpuGemmSeconds(shape, serialSchedule(96, 256, 512), target);
  double overflows = tuning::estimateCpuGemmSeconds(shape, serialSchedule(2048, 256, 512), target);
  CHECK(fits > 0);
  CHECK(overflows > fits * 1.2);
  // So does a B panel far beyond L3 (kc x nc = 256 x 32768 f32 = 32 MiB).
  GemmShape wide{1, 96, 32768, 256, DType::F32};
  double panelFits = tuning::estimateCpuGemmSeconds(wide, serialSchedule(96, 256, 512), target);
  double panelOverflows =
      tuning::estimateCpuGemmSeconds(wide, serialSchedule(96, 256, 32768), target);
  CHECK(panelOverflows > panelFits);
}

TEST_CASE("cost model: padding to the register tile costs time", "[compiler][costmodel]") {
  codegen::CpuTarget target = testTarget();
  MatMulSchedule s = serialSchedule(96, 256, 512);
  double exact = tuning::estimateCpuGemmSeconds({1, 96, 64, 256, DType::F32}, s, target);
  // n = 65 pads to 80 columns of 16: the arithmetic grows by a quarter for
  // 1/64 more work (the packing traffic, about half the estimate here, by 1/64).
  double padded = tuning::estimateCpuGemmSeconds({1, 96, 65, 256, DType::F32}, s, target);
  CHECK(padded > exact * 1.08);
  // On the GPU: K = 513 pads to 528 with blockK 16; one block more than a
  // wave holds costs a whole wave.
  codegen::GpuTarget gpu = *codegen::gpuTargetNamed("sm_90a");
  lower::GpuMatMulSchedule tile;
  double gpuExact = tuning::estimateGpuGemmSeconds({1, 1024, 1024, 512, DType::F32}, tile, gpu);
  double gpuPadded = tuning::estimateGpuGemmSeconds({1, 1024, 1024, 513, DType::F32}, tile, gpu);
  CHECK(gpuPadded > gpuExact * 1.02);
  // One resident block of 256 threads per SM, 16 SMs: 1024 x 1024 is 16 whole
  // waves of 64 x 64 tiles, 1024 x 1025 needs a 17th.
  gpu.numSms = 16;
  gpu.maxThreadsPerSm = 256;
  double fullWaves = tuning::estimateGpuGemmSeconds({1, 1024, 1024, 64, DType::F32}, tile, gpu);
  double extraWave = tuning::estimateGpuGemmSeconds({1, 1024, 1025, 64, DType::F32}, tile, gpu);
  CHECK(extraWave > fullWaves * 1.05);
}

TEST_CASE("cost model: a ragged last column panel leaves a core idle", "[compiler][costmodel]") {
  codegen::CpuTarget target = testTarget();
  target.cores = 2;
  // VGG16's 14x14 layer as an im2col GEMM: 196 columns over two cores.
  GemmShape shape{1, 512, 196, 4608, DType::F32};
  MatMulSchedule s = serialSchedule(144, 512, 144);
  s.nr = 48;
  s.mr = 6;
  s.vectorWidth = 16;
  s.parallel = Parallel::Outer; // panels of 144 and 52 columns
  double ragged = tuning::estimateCpuGemmSeconds(shape, s, target);
  s.nc = 96; // 96 + 96 + 4: three tasks, two rounds
  double moreRounds = tuning::estimateCpuGemmSeconds(shape, s, target);
  s.nc = 240;
  s.parallel = Parallel::Inner; // the rows split evenly: 4 row blocks of 144 (the last 80)
  double rows = tuning::estimateCpuGemmSeconds(shape, s, target);
  CHECK(rows < ragged);
  CHECK(ragged < moreRounds * 1.05);
  // Evenly split panels keep both cores busy: 192 columns in two panels of 96.
  GemmShape even{1, 512, 192, 4608, DType::F32};
  s.parallel = Parallel::Outer;
  s.nc = 96;
  double balanced = tuning::estimateCpuGemmSeconds(even, s, target);
  CHECK(balanced < ragged * 0.8);
}

TEST_CASE("cost model: a GPU block that cannot be resident is infeasible",
          "[compiler][costmodel]") {
  codegen::GpuTarget gpu = *codegen::gpuTargetNamed("sm_80");
  lower::GpuMatMulSchedule tooMany;
  tooMany.blockM = 128;
  tooMany.blockN = 128;
  tooMany.threadM = 2;
  tooMany.threadN = 2; // 4096 threads
  CHECK(tuning::estimateGpuGemmSeconds({1, 256, 256, 256, DType::F32}, tooMany, gpu) ==
        tuning::kInfeasibleSeconds);
  lower::GpuMatMulSchedule fine;
  CHECK(tuning::estimateGpuGemmSeconds({1, 256, 256, 256, DType::F32}, fine, gpu) <
        tuning::kInfeasibleSeconds);
}

TEST_CASE("cost model: tensor-core schedules are feasible and beat CUDA cores on bf16",
          "[compiler][costmodel]") {
  codegen::GpuTarget gpu = *codegen::gpuTargetNamed("sm_90a");
  GemmShape shape{1, 4096, 4096, 4096, DType::F32};
  shape.operandDtype = DType::BF16;
  shape.denseOperands = true;
  shape.aRun = shape.bRun = 4096;
  lower::GpuMatMulSchedule cudaCores;
  cudaCores.blockM = cudaCores.blockN = 128;
  cudaCores.blockK = 16;
  cudaCores.threadM = cudaCores.threadN = 8;
  double simt = tuning::estimateGpuGemmSeconds(shape, cudaCores, gpu);
  double mma = tuning::estimateGpuGemmSeconds(shape, lower::defaultGpuMmaSchedule(shape, gpu), gpu);
  double wgmma =
      tuning::estimateGpuGemmSeconds(shape, lower::defaultGpuWgmmaSchedule(shape, gpu), gpu);
  CHECK(simt < tuning::kInfeasibleSeconds);
  CHECK(mma < simt);
  CHECK(wgmma < simt);
  // A warpgroup tile past what an SM's shared memory holds is not.
  lower::GpuMatMulSchedule huge = lower::defaultGpuWgmmaSchedule(shape, gpu);
  huge.blockM = 256;
  huge.stages = 8;
  CHECK(tuning::estimateGpuGemmSeconds(shape, huge, gpu) == tuning::kInfeasibleSeconds);
}

TEST_CASE("cost model: the ranking of a group's space is a stable total order",
          "[compiler][costmodel]") {
  CompileCase c("cost_rank");
  Tensor a = c.input("a", {61, 70});
  c.output("y", relu(matmul(a, c.param("w", {70, 45})) + c.param("b", {45})));
  c.output("p", softmax(a));
  REQUIRE(c.graph().finalize());
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.tuning = TuningMode::Off;
  codegen::CpuTarget target = testTarget();
  std::ostringstream dump;
  CompileReport report;
  auto program = compiler::lowerProgram(c.graph().ir(), options, target,
                                        tuning::targetFingerprint(target), dump, report);
  REQUIRE(program);
  int ranked = 0;
  for (const passes::FusionGroup &group : program->fusion.groups) {
    if (group.kind != passes::GroupKind::Contraction && group.kind != passes::GroupKind::RowNorm)
      continue;
    std::vector<lower::Schedule> space = lower::scheduleSpace(*program->graph, group, target);
    REQUIRE(space.size() > 1);
    std::vector<size_t> order = tuning::rankByCost(*program->graph, group, space, target);
    // A permutation of the space.
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      CHECK(sorted[i] == i);
    // Estimates never decrease along it, and equal ones keep the space's order.
    for (size_t i = 1; i < order.size(); ++i) {
      double before = tuning::estimateSeconds(*program->graph, group, space[order[i - 1]], target);
      double after = tuning::estimateSeconds(*program->graph, group, space[order[i]], target);
      CHECK(before <= after);
      if (before == after)
        CHECK(order[i - 1] < order[i]);
      CHECK(after > 0);
      CHECK(after < tuning::kInfeasibleSeconds);
    }
    // The same input gives the same order.
    CHECK(tuning::rankByCost(*program->graph, group, space, target) == order);
    // A GPU schedule is not for this target: it goes last.
    std::vector<lower::Schedule> mixed = space;
    mixed.insert(mixed.begin(), lower::GpuRowNormSchedule{});
    CHECK(tuning::rankByCost(*program->graph, group, mixed, target).back() == 0);
    ++ranked;
  }
  CHECK(ranked == 2);
}

} // namespace
} // namespace kiln::test
