// Helpers for contraction lowering tests: build a small graph with random inputs, lower its
// one Contraction group, run the kernel (LLVM host JIT or the kernel IR evaluator) with a
// poisoned output and workspaces, and compare with the reference interpreter.
#pragma once

#include "codegen/Target.h"
#include "codegen/llvm/HostBackend.h"
#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"
#include "ir/kernel/Evaluator.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/LowerContraction.h"
#include "support/HostTensor.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::test {

/// Which executor runs a lowered kernel.
enum class Runner {
  Jit,       ///< LLVM host JIT at O3, parallel loops on the thread pool
  Evaluator, ///< the kernel IR evaluator: slow, but reports every out-of-bounds access
};

inline const char *runnerName(Runner runner) { return runner == Runner::Jit ? "jit" : "evaluator"; }

/// The host target, computed once.
inline const codegen::CpuTarget &hostTarget() {
  static const codegen::CpuTarget target = codegen::hostCpuTarget();
  return target;
}

/// A graph under construction with a random tensor for every input.
class GraphCase {
public:
  explicit GraphCase(uint64_t seed = 1) : rng_(seed) {}

  ir::Graph &graph() { return *graph_; }
  const NamedTensors &inputs() const { return inputs_; }

  /// A graph input filled with random values: floats uniform in [-1, 1), integers over their
  /// whole range for i32/i64 (so wrapping shows) and [-128, 128) for i8.
  ir::Value *input(const std::string &name, DType dtype, std::vector<int64_t> shape) {
    return random(graph_->addInput(name, ir::TensorType{dtype, shape}), dtype, shape);
  }
  /// A graph parameter filled as input() fills inputs: a weight the CPU packs in a prelude.
  ir::Value *param(const std::string &name, DType dtype, std::vector<int64_t> shape) {
    return random(graph_->addParam(name, ir::TensorType{dtype, shape}), dtype, shape);
  }
  /// input(), or param() when `isParam`.
  ir::Value *operand(const std::string &name, DType dtype, std::vector<int64_t> shape,
                     bool isParam) {
    return isParam ? param(name, dtype, std::move(shape)) : input(name, dtype, std::move(shape));
  }

  ir::Value *node(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs = {}) {
    auto value = graph_->addNode(kind, std::move(operands), std::move(attrs));
    INFO((value ? std::string() : value.error().str()));
    REQUIRE(value);
    return *value;
  }

  void output(ir::Value *value) { REQUIRE(graph_->addOutput("out", value)); }

private:
  ir::Value *random(Expected<ir::Value *> value, DType dtype, const std::vector<int64_t> &shape) {
    REQUIRE(value);
    const std::string &name = (*value)->name();
    double low = -1.0, high = 1.0;
    if (dtype == DType::I8)
      low = -128, high = 128;
    else if (dtype == DType::I32)
      low = -2147483648.0, high = 2147483648.0;
    else if (dtype == DType::I64)
      low = -9.2e18, high = 9.2e18;
    inputs_.emplace(name, HostTensor::randomUniform(dtype, shape, rng_, low, high));
    return *value;
  }

  std::unique_ptr<ir::Graph> graph_ = std::make_unique<ir::Graph>("contraction_test");
  NamedTensors inputs_;
  Rng rng_;
};

inline ir::AttrMap matmulAttrs(bool transposeA = false, bool transposeB = false,
                               DType accumulate = DType::F32) {
  return {{"transpose_a", transposeA}, {"transpose_b", transposeB}, {"accumulate", accumulate}};
}

/// Makes the graph x[m, k] @ w[k, n] (the operands transposed where asked), its output.
/// With `weightParam`, w is a parameter (a weight the CPU packs once, in a prelude).
inline void buildMatMul(GraphCase &c, int64_t m, int64_t n, int64_t k, DType dtype,
                        DType accumulate, bool transposeA = false, bool transposeB = false,
                        bool weightParam = false) {
  ir::Value *x =
      c.input("x", dtype, transposeA ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
  ir::Value *w =
      c.operand("w", dtype, transposeB ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                weightParam);
  c.output(c.node(ir::OpKind::MatMul, {x, w}, matmulAttrs(transposeA, transposeB, accumulate)));
}

struct ConvParams {
  std::vector<int64_t> stride{1, 1}, padding{0, 0, 0, 0}, dilation{1, 1};
  int64_t groups = 1;
  std::string layout = "nchw";
  DType accumulate = DType::F32;

  ir::AttrMap attrs() const {
    return {{"stride", stride}, {"padding", padding}, {"dilation", dilation},
            {"groups", groups}, {"layout", layout},   {"accumulate", accumulate}};
  }
};

/// The plan of `graph` and its only Contraction group.
struct PlannedContraction {
  passes::FusionPlan plan;
  const passes::FusionGroup *group = nullptr;
};

inline PlannedContraction planContraction(const ir::Graph &graph) {
  auto plan = passes::planFusion(graph);
  INFO((plan ? std::string() : plan.error().str()));
  REQUIRE(plan);
  PlannedContraction planned{std::move(*plan), nullptr};
  for (const passes::FusionGroup &group : planned.plan.groups)
    if (group.kind == passes::GroupKind::Contraction) {
      REQUIRE(planned.group == nullptr);
      planned.group = &group;
    }
  REQUIRE(planned.group != nullptr);
  return planned;
}

/// Fills a tensor with a pattern no correct kernel leaves behind: NaN for floats, 0x7F7F...
/// for integers.
inline void poison(HostTensor &tensor) {
  std::ranges::fill(tensor.bytes(), isFloatingPoint(tensor.dtype()) ? 0xFF : 0x7F);
}

/// Runs a lowered kernel (after its prelude, when it has one, as the launch plan does) on
/// `inputs` (every group input must be a named graph input or parameter) and returns the output.
inline Expected<HostTensor> runKernel(const lower::LoweredKernel &lowered,
                                      const passes::FusionGroup &group, const NamedTensors &inputs,
                                      Runner runner) {
  std::vector<HostTensor> buffers;
  for (const ir::Value *value : group.inputs) {
    auto it = inputs.find(value->name());
    REQUIRE(it != inputs.end());
    buffers.push_back(it->second);
  }
  const ir::TensorType &outType = group.root->type();
  buffers.emplace_back(outType.dtype, outType.shape);
  poison(buffers.back());
  size_t outIndex = buffers.size() - 1;
  const auto &params = lowered.kernel.params;
  REQUIRE(params.size() == group.inputs.size() + 1 + size_t(lowered.numWorkspaces));
  for (size_t i = outIndex + 1; i < params.size(); ++i) {
    buffers.emplace_back(params[i]->dtype, std::vector<int64_t>{params[i]->size});
    poison(buffers.back());
  }
  std::vector<kir::Kernel> kernels;
  if (lowered.prelude)
    kernels.push_back(*lowered.prelude);
  kernels.push_back(lowered.kernel);
  if (runner == Runner::Evaluator) {
    for (const kir::Kernel &kernel : kernels)
      KILN_TRY_VOID(kir::evaluateKernel(kernel, buffers));
  } else {
    KILN_TRY(auto module, codegen::compileHostModule(kernels, hostTarget()));
    std::vector<void *> args;
    for (HostTensor &buffer : buffers)
      args.push_back(buffer.bytes().data());
    for (const kir::Kernel &kernel : kernels) {
      codegen::HostKernelFn fn = module->lookupKernel(kernel.name);
      REQUIRE(fn != nullptr);
      fn(args.data());
    }
  }
  return std::move(buffers[outIndex]);
}

/// Unit roundoff of a dtype (half an ulp at 1); 0 for integers.
inline double unitRoundoff(DType dtype) {
  switch (dtype) {
  case DType::F64: return 0x1p-53;
  case DType::F32: return 0x1p-24;
  case DType::F16: return 0x1p-11;
  case DType::BF16: return 0x1p-8;
  case DType::F8E4M3: return 0x1p-4;
  case DType::F8E5M2: return 0x1p-3;
  default: return 0;
  }
}

/// Compares element by element. Floats: the accumulation error bound of a K-term sum of
/// products of magnitude at most `scale` in `accumulate` (4 K u_acc scale), plus two ulps of
/// the output dtype (the anchor's rounding and one epilogue rounding). Integers: exact.
inline void checkClose(const HostTensor &got, const HostTensor &want, int64_t k, DType accumulate,
                       double scale = 1.0) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  double accError = 4.0 * double(std::max<int64_t>(k, 1)) * unitRoundoff(accumulate) * scale;
  double outRound = 4.0 * unitRoundoff(want.dtype());
  int64_t bad = 0, firstBad = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    bool ok;
    if (!isFloatingPoint(want.dtype())) {
      ok = g == w;
    } else if (std::isnan(w)) {
      ok = std::isnan(g);
    } else {
      double tolerance = accError + outRound * (std::abs(w) + accError);
      ok = std::abs(g - w) <= tolerance;
    }
    if (!ok) {
      if (firstBad < 0)
        firstBad = i;
      ++bad;
      worst = std::max(worst, std::abs(g - w));
    }
  }
  INFO(fmt::format("{} of {} elements differ; first at {}: got {} want {}; worst error {}", bad,
                   want.numElements(), firstBad, firstBad >= 0 ? got.getDouble(firstBad) : 0.0,
                   firstBad >= 0 ? want.getDouble(firstBad) : 0.0, worst));
  CHECK(bad == 0);
}

/// Lowers the graph's contraction with `schedule` (the default when empty), runs it and
/// compares with the reference. `k` is the reduction length, for the float tolerance.
inline void checkContraction(GraphCase &c, int64_t k, DType accumulate, Runner runner,
                             std::optional<lower::Schedule> schedule = std::nullopt,
                             double scale = 1.0) {
  PlannedContraction planned = planContraction(c.graph());
  const codegen::CpuTarget &target = hostTarget();
  lower::Schedule chosen =
      schedule ? *schedule : lower::defaultContractionSchedule(c.graph(), *planned.group, target);
  INFO("schedule: " << lower::scheduleStr(chosen) << ", runner: " << runnerName(runner));
  auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, chosen, target);
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  auto got = runKernel(*lowered, *planned.group, c.inputs(), runner);
  INFO((got ? std::string() : got.error().str()));
  REQUIRE(got);
  auto want = ir::interpret(c.graph(), c.inputs());
  REQUIRE(want);
  checkClose(*got, want->at("out"), k, accumulate, scale);
}

} // namespace kiln::test
