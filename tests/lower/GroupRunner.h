// A test harness for lowering: plans fusion for a graph, lowers every group,
// runs the kernels in plan order on HostTensors (kernel IR evaluator or LLVM
// host JIT) and returns the graph's outputs, to compare with ir::interpret.
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"
#include "support/HostTensor.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::test {

/// What runs the lowered kernels.
enum class Executor {
  Evaluator, ///< ir/kernel/Evaluator.h: serial, reports every out-of-bounds access
  Jit,       ///< codegen/llvm/HostBackend.h: O3 machine code, parallel loops on the pool
  Simulator, ///< GPU lowering (lower::lowerGroup on a GpuTarget) run on the SIMT simulator (runtime/sim)
};

const char *executorName(Executor executor);

/// Picks the schedule of each group (default: lower::defaultSchedule).
using ScheduleChooser = std::function<lower::Schedule(
    const ir::Graph &, const passes::FusionGroup &, const codegen::CpuTarget &)>;

/// Picks the GPU schedule of each group (default: lower::defaultSchedule).
using GpuScheduleChooser = std::function<lower::Schedule(
    const ir::Graph &, const passes::FusionGroup &, const codegen::GpuTarget &)>;

struct GroupRunOptions {
  Executor executor = Executor::Evaluator;
  ScheduleChooser chooseSchedule; ///< empty: the default schedule
  /// Executor::Simulator: the GPU the kernels are lowered for, and their schedules.
  std::string gpuArch = "sm_90a";
  GpuScheduleChooser chooseGpuSchedule; ///< empty: the default GPU schedule
  /// Executor::Simulator: every lowered kernel, in plan order (for structure checks).
  std::vector<kir::Kernel> *loweredKernels = nullptr;
  /// Executor::Simulator: also compile the kernels with both GPU backends and
  /// assemble them with ptxas, failing on any error or register spill.
  bool checkAssembly = true;
};

/// The machine's target, computed once (hostCpuTarget()).
const codegen::CpuTarget &testHostTarget();

/// Fills a tensor with bytes no correct kernel leaves behind: NaN for floats,
/// 0x5A5A... for integers (bools read 0x5A as true).
void poisonTensor(HostTensor &tensor);

/// Runs `graph` through fusion, lowering and the chosen executor. Alias groups
/// reinterpret their input's bytes, Constant groups hold the node's values;
/// every kernel output and workspace starts poisoned. Returns the outputs by
/// name, each with its output's shape.
Expected<NamedTensors> runLoweredGraph(const ir::Graph &graph, const NamedTensors &inputs,
                                       const GroupRunOptions &options = {});

/// The largest difference allowed between a kernel's element and the
/// reference's, as a multiple of max(1, |reference|): 1e-12 for f64, 1e-5
/// for f32, two ulps at 1 for the narrow floats, 0 (exact) for integers and bool.
double toleranceOf(DType dtype);

/// Compares `got` with `want` element by element with toleranceOf (NaN must
/// match NaN); returns "" or a description of the first mismatches.
std::string compareTensors(const HostTensor &got, const HostTensor &want,
                           double toleranceScale = 1.0);

} // namespace kiln::test
