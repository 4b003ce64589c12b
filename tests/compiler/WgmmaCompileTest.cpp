// The example models under bf16-mixed on the simulator for sm_90a with every contraction that
// can take warpgroup products forced onto them (the wgmma template is not the default yet):
// dense layers, attention's batched products and nhwc convolutions with their fused epilogues,
// end to end against the fp64 reference within bf16-mixed's tolerance; and again with the
// operands of each GEMM that can arriving by bulk tensor copies from a producer warpgroup; and
// the operand-read probe a failing GPU GEMM test prints (tests/ProductProbe.h), run through a
// compiled tma GEMM, finding every read right; and the tensor-core epilogues' stores in the
// PTX the whole pipeline makes.
#include "CompileTestUtil.h"

#include "passes/lower/gpu/GpuContraction.h"

#include "examples/models/ExampleRegistry.h"

namespace kiln::test {

TEST_CASE("the examples under bf16-mixed on wgmma match the reference", "[compiler][sim][wgmma]") {
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  const bool tma = GENERATE(false, true);
  const examples::ExampleModel &model = models[index];
  INFO("example " << model.name << (tma ? " with bulk tensor copies" : ""));
  Graph graph(model.name, freshSeed());
  buildTinyExample(model, graph);
  REQUIRE(graph.finalize());
  Rng rng(freshSeed());
  NamedTensors inputs;
  for (const ir::Value *input : graph.ir().inputs()) {
    Values values = isInteger(input->type().dtype) ? Values::indices(1000) : Values::normal();
    inputs.emplace(input->name(),
                   randomTensor(input->type().dtype, input->type().shape, rng, values));
  }
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = wgmmaBf16Options(TargetKind::Sim, forced, tma);
  checkPolicyNumerics(graph.ir(), inputs, graph.paramValues(), options);
  CHECK(*forced > 0); // every example has such contractions (cnn 4, vgg 14, transformer 7, ...)
}

TEST_CASE("the operand-read probe of a compiled tma GEMM finds every read right on the simulator",
          "[compiler][sim][wgmma][tma][probe]") {
  const bool transposeB = GENERATE(false, true);
  INFO("transpose_b " << transposeB);
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = wgmmaBf16Options(TargetKind::Sim, forced, /*tma=*/true);
  // Odd M, N past one 64-wide tile, K over three 64-deep tiles with a short last one.
  const int64_t m = 70, n = 72, k = 136;
  testing::ProductRun run = compiledProductRun(m, n, k, transposeB, DType::BF16, options);
  CHECK(*forced == 1);
  testing::ProductReads reads = testing::probeProductReads({m, n, k, m}, run);
  CHECK(testing::ProductReads::wrong(reads.a) == 0);
  CHECK(testing::ProductReads::wrong(reads.b) == 0);
  CHECK(reads.runs == 2 * 4 + 2 * 4); // two shifts of each diagonal, 4 digits of each code
  INFO(testing::describeProductReads(reads));
  CHECK(testing::productVerdict(reads).starts_with("every probed read is right"));
}

TEST_CASE("tensor-core epilogues store each accumulator pair as one 32-bit store",
          "[compiler][wgmma][tma][mma]") {
  // A thread holds its accumulators in pairs of adjacent columns (rows r and r + 8 of a
  // fragment); a bf16 output with an even row takes each pair in one 4-byte store. Edge tiles
  // on both axes (130 x 264: one guard for each pair), and whole tiles at 8192 wide, where
  // LLVM knows bit 3 of the row is clear and writes row + 8 as a bitwise or: its stores pair
  // up only once the kernel simplifier moves the + 8 out of the row's scale.
  // Through NVRTC, whose compiler does not join such stores, the CUDA C writes each pair as
  // one 4-byte store itself (codegen/cuda/CudaPairedStores.cpp).
  enum class Family { Mma, Wgmma, Tma };
  const GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{130, 264}, {8192, 8192}})
    for (Family family : {Family::Mma, Family::Wgmma, Family::Tma}) {
      INFO(m << " x 336 x " << n << ", family " << int(family) << ", "
             << (backend == GpuBackend::Llvm ? "llvm" : "nvrtc"));
      Graph graph("epilogue_pairs", freshSeed());
      Tensor x = graph.input("x", {m, 336}, DType::BF16);
      Tensor w = graph.input("w", {336, n}, DType::BF16);
      graph.output("y", matmul(x, w));
      REQUIRE(graph.finalize());
      const codegen::GpuTarget sm90a = *codegen::gpuTargetNamed("sm_90a");
      CompileOptions options = sm90aPtxOptions(backend);
      auto chosen = std::make_shared<std::optional<lower::GpuMatMulSchedule>>();
      options.chooseSchedule = [sm90a, family, chosen](const ir::Graph &graph,
                                                       const passes::FusionGroup &group) {
        const bool tma = family == Family::Tma;
        std::optional<lower::Schedule> s =
            family == Family::Mma ? lower::defaultGpuContractionSchedule(graph, group, sm90a)
                                  : lower::wgmmaContractionSchedule(group, sm90a, tma);
        if (s)
          *chosen = std::get<lower::GpuMatMulSchedule>(*s);
        return s;
      };
      auto kernels = compileGpuKernels(graph.ir(), options);
      REQUIRE(kernels);
      REQUIRE(chosen->has_value());
      const lower::GpuMatMulSchedule &s = **chosen;
      INFO(lower::scheduleStr(lower::Schedule{s}));
      CHECK(s.wgmma == (family != Family::Mma));
      CHECK(s.tma == (family == Family::Tma));
      auto count = [&](const std::string &op) {
        size_t found = 0;
        for (size_t at = kernels->ptx.find(op); at != std::string::npos;
             at = kernels->ptx.find(op, at + 1))
          ++found;
        return found;
      };
      // LLVM spells the stores b16 / b32, NVVM u16 / u32.
      CHECK(count("st.global.b16") + count("st.global.u16") == 0);
      // Every accumulator of a thread once: warpM x warpN over 32 or 128 threads, in pairs.
      const int64_t threads = s.wgmma ? 128 : 32;
      CHECK(count("st.global.b32") + count("st.global.u32") ==
            size_t(s.warpM * s.warpN / threads / 2));
    }
}

} // namespace kiln::test
