// Every kernel of every example model, at its full size and at the small size
// the simulator tests run, through both GPU backends and ptxas: each assembles,
// none spills, and the registers and shared memory of each are printed. The
// small size runs for sm_80 and sm_90a; the full size (minutes of ptxas under
// the sanitizers) for sm_90a, the architecture the benchmarks measure.
#include "CompileTestUtil.h"

#include "GpuAssemblyCheck.h"
#include "examples/models/ExampleRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace kiln::test {
namespace {

TEST_CASE("every example's GPU kernels assemble without spills", "[compiler][gpu-assembly]") {
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  // (test size, arch): the full size on sm_90a alone (see the top of the file).
  auto [small, arch] = GENERATE(table<bool, std::string>(
      {{true, "sm_80"}, {true, "sm_90a"}, {false, "sm_90a"}}));
  const examples::ExampleModel &model = models[index];
  std::string context = fmt::format("example {} ({} size) for {}", model.name,
                                    small ? "test" : "full", arch);
  INFO(context);
  Graph graph(model.name, 1);
  if (small)
    buildTinyExample(model, graph);
  else
    model.build(graph, model.defaultBatch);
  REQUIRE(graph.finalize());

  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArch = arch;
  auto kernels = compileGpuKernels(graph.ir(), options);
  REQUIRE(kernels.has_value());
  CHECK(kernels->ptx.find(".target " + arch) != std::string::npos);
  auto target = codegen::gpuTargetNamed(arch);
  REQUIRE(target.has_value());
  std::vector<AssembledKernel> assembled =
      checkGpuKernelsAssemble(kernels->kernels, *target, context);
  std::string table = fmt::format("{}: {} kernels\n", context, kernels->kernels.size());
  for (const AssembledKernel &k : assembled)
    table += fmt::format("  {:6} {:40} {:3} registers {:6} B shared {:4} B stack\n", k.backend,
                         k.resources.name, k.resources.registers, k.resources.sharedBytes,
                         k.resources.stackBytes);
  std::cout << table;
  // ptxas reports every kernel of each backend's module.
  for (const char *backend : {"llvm", "nvrtc"}) {
    auto count = std::ranges::count_if(
        assembled, [&](const AssembledKernel &k) { return k.backend == backend; });
    if (count > 0)
      CHECK(static_cast<size_t>(count) == kernels->kernels.size());
  }
}

TEST_CASE("every example's wgmma kernels under bf16-mixed assemble without spills",
          "[compiler][gpu-assembly][wgmma]") {
  // Full size on sm_90a with every contraction that can on warpgroup products (`--wgmma`):
  // the 128 x 256 tiles hold 128 accumulators a thread beside the fused epilogues.
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  const bool tma = GENERATE(false, true); // operands by cp.async, or by bulk tensor copies
  const examples::ExampleModel &model = models[index];
  std::string context = fmt::format("example {} (full size, bf16-mixed, wgmma{}) for sm_90a",
                                    model.name, tma ? " + tma" : "");
  INFO(context);
  Graph graph(model.name, 1);
  model.build(graph, model.defaultBatch);
  REQUIRE(graph.finalize());
  const codegen::GpuTarget target = *codegen::gpuTargetNamed("sm_90a");
  auto forced = std::make_shared<std::atomic<int>>(0);
  CompileOptions options = wgmmaBf16Options(TargetKind::Cuda, forced, tma);
  auto kernels = compileGpuKernels(graph.ir(), options);
  REQUIRE(kernels.has_value());
  CHECK(*forced > 0);
  CHECK(kernels->ptx.find("wgmma.mma_async") != std::string::npos);
  const bool hasBulkCopies = kernels->ptx.find("cp.async.bulk.tensor") != std::string::npos;
  // Every example but resnet has a dense product a tensor map takes (resnet's convolutions
  // gather their im2col rows, and its head's rows are not 16-byte multiples).
  CHECK(hasBulkCopies == (tma && model.name != "resnet"));
  std::vector<AssembledKernel> assembled =
      checkGpuKernelsAssemble(kernels->kernels, target, context);
  int most = 0;
  for (const AssembledKernel &k : assembled)
    most = std::max(most, k.resources.registers);
  std::cout << fmt::format("{}: {} kernels, at most {} registers\n", context,
                           kernels->kernels.size(), most);
}

} // namespace
} // namespace kiln::test
