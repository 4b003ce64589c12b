// End-to-end test support: random inputs per dtype with fresh, printed seeds,
// and the check that a compiled model matches the fp64 reference interpreter.
#pragma once

#include "compiler/Compile.h"
#include "examples/models/ExampleRegistry.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "support/HostTensor.h"
#include "tests/ProductProbe.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

/// Every float dtype, widest first, then the integer ones.
inline const std::vector<DType> kFloatTypes = {DType::F64,  DType::F32,    DType::F16,
                                               DType::BF16, DType::F8E4M3, DType::F8E5M2};
inline const std::vector<DType> kIntTypes = {DType::I64, DType::I32, DType::I8};
/// Every dtype.
std::vector<DType> allDTypes();

/// Odd sizes (below, at and above every vector width and tile) and round ones.
inline const std::vector<int64_t> kOddSizes = {1, 3, 7, 17, 33, 65, 127, 257};
inline const std::vector<int64_t> kRoundSizes = {64, 256, 1024};
/// kOddSizes then kRoundSizes.
std::vector<int64_t> allSizes();

/// A seed no earlier call of this test case got: Catch's --rng-seed, the test
/// case's name and a counter that restarts with each test case, mixed. Running
/// one test case alone with the same --rng-seed gives it the same seeds again;
/// `--rng-seed time` gives fresh ones.
uint64_t freshSeed();

/// How the values of a random tensor are drawn.
struct Values {
  enum class Kind {
    Default,  ///< floats N(0, 1); integers uniform in [-8, 8]; bool fair coin
    Positive, ///< uniform in [low, high) (default [0.25, 4)): log, sqrt, rsqrt, pow bases
    Uniform,  ///< uniform in [low, high), integers rounded toward zero
    Indices,  ///< integers uniform in [low, high): gather and take_along_axis indices
  };
  Kind kind = Kind::Default;
  double low = 0;
  double high = 0;

  static Values normal() { return {}; }
  static Values positive(double low = 0.25, double high = 4.0) {
    return {Kind::Positive, low, high};
  }
  static Values uniform(double low, double high) { return {Kind::Uniform, low, high}; }
  /// Valid indices into an axis of `size` elements; with `negative`, also
  /// the NumPy-style negative ones in [-size, 0).
  static Values indices(int64_t size, bool negative = false) {
    return {Kind::Indices, negative ? -static_cast<double>(size) : 0.0,
            static_cast<double>(size)};
  }
};

/// A random tensor of `dtype` and `shape` drawn as `values` says.
HostTensor randomTensor(DType dtype, const std::vector<int64_t> &shape, Rng &rng,
                        Values values = {});

/// Compiles `graph` for the CPU, runs it with poisoned buffers, runs the fp64
/// reference on the same tensors and compares every output with
/// toleranceFor(its dtype). A failure is reported with Catch2 (FAIL_CHECK), naming
/// the output, its type, the number of mismatches, the first one and the
/// largest errors; `context` (e.g. the seed) is added to every message. Returns
/// the compiled model's outputs (empty when compile or run failed); `report`,
/// when given, receives the compile report (kernel counts). `expectedOutputs`,
/// when given, are the reference's outputs computed earlier (for tests that
/// compile one graph many ways).
NamedTensors checkCompiledMatchesReference(const ir::Graph &graph, NamedTensors inputsAndParams,
                                           const std::string &context = {},
                                           const CompileOptions &options = {},
                                           CompileReport *report = nullptr,
                                           const NamedTensors *expectedOutputs = nullptr);

/// Compares every output of `graph` in `actual` against `expected` with the
/// per-dtype tolerance, reporting each mismatch with FAIL_CHECK.
void checkOutputsMatch(const ir::Graph &graph, const NamedTensors &actual,
                       const NamedTensors &expected);

/// Builds example model `model` at a size the simulator and the reference run quickly (VGG on
/// 32x32 images, a 32-wide transformer block over 9 tokens), with `batch` images or sequences.
void buildTinyExample(const examples::ExampleModel &model, Graph &graph, Dim batch = 1);

/// Options that compile a graph's GPU kernels for sm_90a through `backend` without a GPU
/// (compileGpuKernels), bypassing the kernel cache: the PTX this build's codegen makes, for
/// tests that read it.
CompileOptions sm90aPtxOptions(GpuBackend backend = GpuBackend::Llvm);

/// Options for `target` (sim or cuda) on sm_90a under bf16-mixed with every contraction that
/// can on warpgroup products, as `kiln run --wgmma` compiles; `forced` counts those groups.
CompileOptions wgmmaBf16Options(TargetKind target, std::shared_ptr<std::atomic<int>> forced,
                                bool tma = false);

/// A GEMM compiled once with `options` for the operand-read probe (tests/ProductProbe.h):
/// y = x [m, k] times w ([k, n], or [n, k] when `transposeB`), both inputs in `dtype`. The
/// runner takes A and B as the probe lays them out (B n x k) and returns y.
testing::ProductRun compiledProductRun(int64_t m, int64_t n, int64_t k, bool transposeB,
                                       DType dtype, const CompileOptions &options);

/// Compiles `graph` and REQUIREs success, printing the error otherwise.
CompiledModel compileOrFail(const ir::Graph &graph, const CompileOptions &options = {});

/// Compiles `graph` with `options` (its precision policy among them), runs it on `inputs` and
/// `params` and CHECKs every output against the fp64 reference within the policy's tolerance
/// (compiler/CheckNumerics.h, as `kiln check-numerics` does).
void checkPolicyNumerics(const ir::Graph &graph, const NamedTensors &inputs,
                         const NamedTensors &params, const CompileOptions &options);

/// One end-to-end case built with the DSL: inputs get random values as they
/// are declared, parameters keep the values given to param(), and check()
/// compares every output against the reference, printing the seed on failure.
class CompileCase {
public:
  explicit CompileCase(std::string name = "test");

  Graph &graph() { return graph_; }
  uint64_t seed() const { return seed_; }
  /// A graph input with random values drawn as `values` says.
  Tensor input(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::F32, Values values = {});
  /// A graph input holding `tensor`.
  Tensor input(const std::string &name, HostTensor tensor);
  /// A parameter (named as given, outside any scope) with random values.
  Tensor param(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::F32, Values values = {});
  void output(const std::string &name, Tensor value) { graph_.output(name, value); }

  /// The tensors to run with: every input and every parameter.
  NamedTensors tensors() const;
  /// REQUIREs that the DSL calls succeeded, then checks the compiled model
  /// against the reference. Returns the compiled outputs.
  NamedTensors check(const CompileOptions &options = {}, CompileReport *report = nullptr,
                     const NamedTensors *expectedOutputs = nullptr);
  /// The reference interpreter's outputs, for check(options, nullptr, &expected).
  NamedTensors reference();
  /// check(), returning the number of kernels the model launches in every run (not counting
  /// the preludes that pack a parameter weight once).
  int checkAndCountKernels();

  Rng &rng() { return rng_; }

private:
  Graph graph_;
  uint64_t seed_;
  Rng rng_;
  NamedTensors inputs_;
};

/// "x1", "f16", "[3, 5]": short pieces for output names.
std::string shapeTag(const std::vector<int64_t> &shape);

} // namespace kiln::test
