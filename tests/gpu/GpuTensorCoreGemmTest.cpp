// Tensor-core GEMM features on the real GPU against the fp64 reference, through both backends:
// split-K (the default for a narrow output over a long K: two launches per group), tiles in
// dynamic shared memory past the static 48 KiB, fp8 models on e4m3 tensor cores (sm_89+), and
// warpgroup products (wgmma, sm_90a) for GEMMs with both operand orientations, their operands
// by cp.async or by a producer warpgroup's bulk tensor copies (tma), and for an nhwc conv2d.
#include "GpuTestDevice.h"

#include "compiler/CompileTestUtil.h"
#include "compiler/CudaCompile.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <atomic>
#include <memory>

namespace kiln::test {
namespace {

/// The target a CUDA compile sizes its schedules for on the test GPU.
codegen::GpuTarget gpuTestTarget() {
  auto target = compiler::gpuTargetFor(gpuTestDevice().properties(), "");
  REQUIRE(target);
  return *target;
}

/// Replaces every contraction group's GPU schedule by `edit` applied to its default.
CompileOptions editingSchedules(CompileOptions options,
                                std::function<void(lower::GpuMatMulSchedule &)> edit) {
  options.chooseSchedule = [edit](const ir::Graph &graph, const passes::FusionGroup &group)
      -> std::optional<lower::Schedule> {
    if (group.kind != passes::GroupKind::Contraction)
      return std::nullopt;
    codegen::GpuTarget target = gpuTestTarget();
    auto schedule = std::get<lower::GpuMatMulSchedule>(
        lower::defaultGpuContractionSchedule(graph, group, target));
    edit(schedule);
    return schedule;
  };
  return options;
}

/// Whether the test GPU runs wgmma (sm_90a); where it does not, says why the test is skipped.
bool hasWarpgroupProducts() {
  codegen::GpuTarget target = gpuTestTarget();
  if (target.sm == 90 && target.archSpecific)
    return true;
  WARN("skipped: wgmma runs only on sm_90a (this GPU is " << target.archName() << ")");
  return false;
}

/// Checks `c` (whose output y is x [m, k] times w, [k, n] or [n, k] when `transposeB`, maybe
/// with an epilogue) compiled with `options`. Where y is wrong, probes which operand elements
/// a plain bf16 GEMM of that shape compiled the same way reads (tests/ProductProbe.h), so the
/// failure names the misreading -- a tile, box or descriptor -- in the same GPU run.
void checkGemmOrProbe(CompileCase &c, const CompileOptions &options, int64_t m, int64_t n,
                      int64_t k, bool transposeB) {
  NamedTensors expected = c.reference();
  NamedTensors got = c.check(options, nullptr, &expected);
  auto y = got.find("y");
  if (y == got.end())
    return; // the compile or the run failed, and check() said so
  const HostTensor &want = expected.at("y");
  if (compareTensors(y->second, want, toleranceFor(want.dtype())).ok)
    return;
  testing::ProductRun run = compiledProductRun(m, n, k, transposeB, DType::BF16, options);
  FAIL_CHECK(testing::describeProductReads(testing::probeProductReads({m, n, k, m}, run)));
}

} // namespace

TEST_CASE("split-K GEMMs on the GPU match the reference", "[gpu][tensor-core]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  CompileCase c("split_k_gpu");
  Tensor x = c.input("x", {37, 4096}, DType::BF16);
  Tensor w = c.param("w", {4096, 72}, DType::BF16);
  c.output("y", relu(matmul(x, w) + c.param("b", {72}, DType::BF16)));
  // The default splits K here (a few output tiles, 128 K tiles); 5 splits leave the last short.
  c.check(cudaOptions(backend));
  c.check(editingSchedules(cudaOptions(backend), [](lower::GpuMatMulSchedule &s) {
    s.splitK = 5;
  }));
}

TEST_CASE("tensor-core tiles in dynamic shared memory on the GPU", "[gpu][tensor-core]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  CompileCase c("dynamic_smem_gpu");
  Tensor x = c.input("x", {300, 520}, DType::BF16);
  Tensor w = c.param("w", {520, 264}, DType::BF16);
  c.output("y", matmul(x, w));
  // 128 x 128 tiles, 4 stages of 32: 64 KiB of shared tiles, past the static 48 KiB.
  c.check(editingSchedules(cudaOptions(backend), [](lower::GpuMatMulSchedule &s) {
    s.blockM = s.blockN = 128;
    s.warpM = s.warpN = 64;
    s.blockK = 32;
    s.stages = 4;
    s.splitK = 1;
  }));
}

TEST_CASE("fp8 models run on e4m3 tensor cores on the GPU", "[gpu][tensor-core]") {
  if (gpuTestTarget().sm < 89) {
    WARN("skipped: no e4m3 tensor cores before sm_89 (this GPU is "
         << gpuTestTarget().archName() << ")");
    return;
  }
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  Graph graph("fp8_gpu", freshSeed());
  Rng rng(freshSeed());
  auto weight = [&](std::string name, std::vector<int64_t> shape) {
    return graph.param(std::move(name), randomTensor(DType::F32, shape, rng));
  };
  Tensor x = graph.input("x", {65, 96});
  Tensor image = graph.input("image", {2, 8, 11, 11});
  Tensor hidden = relu(matmul(x, weight("w1", {96, 128})));
  graph.output("y", matmul(hidden, weight("w2", {128, 40})));
  graph.output("features", relu(conv2d(image, weight("f", {16, 8, 3, 3}))));
  REQUIRE(graph.finalize());
  NamedTensors inputs{{"x", randomTensor(DType::F32, {65, 96}, rng)},
                      {"image", randomTensor(DType::F32, {2, 8, 11, 11}, rng)}};
  CompileOptions options = cudaOptions(backend);
  options.precision = passes::PrecisionPolicy::Fp8;
  checkPolicyNumerics(graph.ir(), inputs, graph.paramValues(), options);
}

TEST_CASE("wgmma GEMMs on sm_90a match the reference", "[gpu][tensor-core][wgmma]") {
  if (!hasWarpgroupProducts())
    return;
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  bool transposeB = GENERATE(false, true);
  bool tma = GENERATE(false, true); // operands by cp.async, or by a producer's bulk copies
  INFO("backend " << backendName(backend) << " transpose_b " << transposeB << " tma " << tma);
  CompileCase c("wgmma_gpu");
  Tensor x = c.input("x", {300, 520}, DType::BF16);
  Tensor w = c.param("w", transposeB ? std::vector<int64_t>{264, 520} : std::vector<int64_t>{520, 264},
                     DType::BF16);
  c.output("y", relu(matmul(x, w, {false, transposeB}) + c.param("b", {264}, DType::BF16)));
  // The wgmma default (128 x 256, 4 stages), a 3-stage 128 x 128 of two warpgroups, a split.
  using Edit = std::function<void(lower::GpuMatMulSchedule &)>;
  for (const Edit &edit : {Edit([](lower::GpuMatMulSchedule &) {}),
                           Edit([](lower::GpuMatMulSchedule &s) {
                             s.blockM = s.blockN = s.warpN = 128;
                             s.stages = 3;
                           }),
                           Edit([](lower::GpuMatMulSchedule &s) { s.splitK = 3; })}) {
    CompileOptions options = cudaOptions(backend);
    options.chooseSchedule = [edit, tma](const ir::Graph &, const passes::FusionGroup &group) {
      std::optional<lower::Schedule> s =
          lower::wgmmaContractionSchedule(group, gpuTestTarget(), tma);
      if (s)
        edit(std::get<lower::GpuMatMulSchedule>(*s));
      return s;
    };
    checkGemmOrProbe(c, options, 300, 264, 520, transposeB);
  }
}

TEST_CASE("wgmma conv2d on sm_90a matches the reference", "[gpu][tensor-core][wgmma]") {
  if (!hasWarpgroupProducts())
    return;
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  auto [stride, padding] = GENERATE(std::pair{1, 1}, std::pair{2, 0});
  INFO("backend " << backendName(backend) << " stride " << stride << " padding " << padding);
  // An implicit GEMM (im2col rows of A by predicated cp.async, zeros in the padding) of odd
  // images and 40 filters over 3 x 3 x 24 taps, with a fused bias and relu, in NHWC.
  CompileCase c("wgmma_conv_gpu");
  Tensor x = c.input("x", {3, 19, 13, 24}, DType::BF16);
  Tensor w = c.param("w", {40, 3, 3, 24}, DType::BF16);
  Conv2DOptions conv{.stride = {stride, stride},
                     .padding = Padding::symmetric(padding, padding),
                     .layout = Layout::NHWC};
  c.output("y", relu(conv2d(x, w, conv) + c.param("b", {40}, DType::BF16)));
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = cudaOptions(backend);
  options.chooseSchedule = [forced](const ir::Graph &, const passes::FusionGroup &group) {
    std::optional<lower::Schedule> s =
        lower::wgmmaContractionSchedule(group, gpuTestTarget(), /*tma=*/false);
    *forced += s.has_value();
    return s;
  };
  c.check(options);
  CHECK(*forced >= 1); // the convolution did run on warpgroup products
}

TEST_CASE("persistent tma GEMMs walk several tiles per block on the GPU",
          "[gpu][tensor-core][wgmma][tma]") {
  if (!hasWarpgroupProducts())
    return;
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  // 128 x 128 tiles of two consumer warpgroups: one block an SM (the register file), 196
  // tiles, so most blocks take two; 9 K tiles each, so stages wrap across tiles.
  CompileCase c("persistent_gpu");
  Tensor x = c.input("x", {1700, 520}, DType::BF16);
  Tensor w = c.param("w", {520, 1704}, DType::BF16); // rows of 16-byte multiples (tma)
  c.output("y", matmul(x, w));
  CompileOptions options = cudaOptions(backend);
  // Checked after the compile, not inside it: the hook may run off the test's thread.
  auto persistentSchedules = std::make_shared<std::atomic<int>>(0);
  options.chooseSchedule = [persistentSchedules](const ir::Graph &,
                                                 const passes::FusionGroup &group) {
    std::optional<lower::Schedule> s = lower::wgmmaContractionSchedule(group, gpuTestTarget(), true);
    auto *gemm = s ? std::get_if<lower::GpuMatMulSchedule>(&*s) : nullptr;
    if (gemm && gemm->tma) {
      gemm->blockM = gemm->blockN = gemm->warpN = 128;
      gemm->stages = 3;
      gemm->splitK = 1;
      gemm->persistent = true;
      ++*persistentSchedules;
    }
    return s;
  };
  checkGemmOrProbe(c, options, 1700, 1704, 520, false);
  CHECK(*persistentSchedules >= 1); // the matmul did run on the persistent schedule
}

} // namespace kiln::test
