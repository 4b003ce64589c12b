// Test cases for the lowering of non-contraction groups: build a graph with
// random (or given) inputs, then check every output of the lowered graph
// against the reference interpreter on every target of the run (testTargets()):
// the CPU (the evaluator and the JIT) and the GPU on the SIMT simulator, each
// with its default schedules and with stress schedules (parallel everywhere, odd
// vector widths, tiny tiles; grid-stride loops, rows split across warps). One
// case list serves every target.
#pragma once

#include "GpuAssemblyCheck.h"
#include "GroupRunner.h"

#include "ir/graph/Interpreter.h"
#include "ir/graph/Printer.h"
#include "passes/lower/LowerKinds.h"
#include "passes/lower/PrintLowered.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Every float dtype, widest first.
inline const std::vector<DType> kFloatTypes = {DType::F64,  DType::F32,    DType::F16,
                                               DType::BF16, DType::F8E4M3, DType::F8E5M2};
inline const std::vector<DType> kIntTypes = {DType::I64, DType::I32, DType::I8};

/// Schedules that take every unusual path: parallel loops for any size, an
/// odd number of partial accumulators, 5 x 5 transpose tiles.
inline lower::Schedule stressSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                                      const codegen::CpuTarget &target) {
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
  default: return lower::defaultSchedule(graph, group, target);
  }
}

/// Where a lowering test case runs: the CPU lowering on the kernel IR evaluator and the host
/// JIT, or the GPU lowering on the SIMT simulator (its kernels also through both GPU backends
/// and ptxas, batched by an AssemblyBatch in the test case).
enum class TestTarget { Cpu, Sim };

/// The targets of this run: $KILN_LOWERING_TARGETS, a comma-separated list of "cpu" and
/// "sim" (ctest runs each case file once per target: the CPU under the sanitizers, the
/// simulator in the release build); every target when it is unset.
const std::vector<TestTarget> &testTargets();

const char *testTargetName(TestTarget target);

class LoweringCase;

/// The case's outputs on `target` with its default schedules: the CPU's on the evaluator
/// (which fails on any out-of-bounds access), the GPU's on the simulator (likewise).
NamedTensors runOn(LoweringCase &c, TestTarget target);

/// The default schedule of `group` for `target`'s lowering (the simulator's is sm_90a's).
lower::Schedule defaultScheduleOn(TestTarget target, const ir::Graph &graph,
                                  const passes::FusionGroup &group);

class LoweringCase {
public:
  explicit LoweringCase(uint64_t seed = 1) : rng_(seed) {}

  ir::Graph &graph() { return *graph_; }
  const NamedTensors &inputs() const { return inputs_; }

  /// A graph input of uniform random values in [low, high), rounded to the dtype.
  ir::Value *input(const std::string &name, DType dtype, std::vector<int64_t> shape,
                   double low = -2.0, double high = 2.0) {
    auto value = graph_->addInput(name, ir::TensorType{dtype, shape});
    REQUIRE(value);
    inputs_.insert_or_assign(name, HostTensor::randomUniform(dtype, shape, rng_, low, high));
    return *value;
  }

  /// A graph input holding exactly `values` (rounded to the dtype).
  ir::Value *input(const std::string &name, DType dtype, std::vector<int64_t> shape,
                   std::vector<double> values) {
    auto value = graph_->addInput(name, ir::TensorType{dtype, shape});
    REQUIRE(value);
    inputs_.insert_or_assign(name, HostTensor::fromDoubles(dtype, shape, values));
    return *value;
  }

  ir::Value *node(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs = {}) {
    auto value = graph_->addNode(kind, std::move(operands), std::move(attrs));
    INFO((value ? std::string() : value.error().str()));
    REQUIRE(value);
    return *value;
  }

  void output(ir::Value *value) {
    REQUIRE(graph_->addOutput(fmt::format("out{}", outputs_++), value));
  }

  /// The reference's outputs.
  NamedTensors reference() {
    auto want = ir::interpret(*graph_, inputs_);
    INFO((want ? std::string() : want.error().str()));
    REQUIRE(want);
    return std::move(*want);
  }

  /// The lowered graph's outputs on one executor and schedule chooser.
  NamedTensors lowered(Executor executor, ScheduleChooser chooser = {}) {
    GroupRunOptions options;
    options.executor = executor;
    options.chooseSchedule = std::move(chooser);
    auto got = runLoweredGraph(*graph_, inputs_, options);
    INFO((got ? std::string() : got.error().str()));
    REQUIRE(got);
    return std::move(*got);
  }

  /// Compares every output with the reference on every target of the run (testTargets()).
  void check(double toleranceScale = 1.0);

  /// On the CPU: both executors, with the default and the stress schedules.
  void checkCpu(double toleranceScale = 1.0) {
    NamedTensors want = reference();
    INFO("graph:\n" << ir::printGraph(*graph_));
    for (Executor executor : {Executor::Evaluator, Executor::Jit}) {
      for (bool stress : {false, true}) {
        INFO("executor " << executorName(executor) << (stress ? ", stress schedule" : ", default schedule"));
        NamedTensors got = lowered(executor, stress ? ScheduleChooser(stressSchedule) : ScheduleChooser());
        for (const auto &[name, tensor] : want) {
          INFO("output " << name);
          std::string report = compareTensors(got.at(name), tensor, toleranceScale);
          std::string kernels =
              report.empty() ? "" : lower::printLoweredGraph(*graph_, testHostTarget());
          INFO("lowered:\n" << kernels);
          CHECK(report == "");
        }
      }
    }
  }

private:
  std::unique_ptr<ir::Graph> graph_ = std::make_unique<ir::Graph>("lowering_test");
  NamedTensors inputs_;
  Rng rng_;
  int outputs_ = 0;
};

} // namespace kiln::test
