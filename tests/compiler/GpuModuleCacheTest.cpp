// The kernel cache behind compileGpuKernels: what the key covers, warm starts
// that return the same PTX and cubin, a corrupt entry rebuilt with a report,
// an unwritable directory, and two processes compiling one model at once.
#include "compiler/GpuModuleCache.h"

#include "examples/models/ExampleRegistry.h"
#include "frontend/TempDir.h"
#include "CacheTestUtil.h"
#include "runtime/cache/CacheDirectory.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using kiln::testing::TempDir;
namespace fs = std::filesystem;

namespace {

/// The mlp example at `batch`, finalized.
std::unique_ptr<Graph> mlp(int64_t batch) {
  auto graph = std::make_unique<Graph>("mlp", 1);
  examples::findExampleModel("mlp")->build(*graph, batch);
  REQUIRE(graph->finalize());
  return graph;
}

CompileOptions cudaOptions(const fs::path &cacheDir, GpuBackend backend = GpuBackend::Llvm,
                           std::string arch = "sm_90a") {
  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArch = std::move(arch);
  options.gpuBackend = backend;
  options.kernelCacheDir = cacheDir.string();
  return options;
}

std::string keyOf(const ir::Graph &graph, const std::string &arch, GpuBackend backend) {
  CompileOptions options = cudaOptions({}, backend, arch);
  options.useKernelCache = false;
  auto kernels = compileGpuKernels(graph, options);
  REQUIRE(kernels);
  return compiler::gpuModuleCacheKey(kernels->kernels, *codegen::gpuTargetNamed(arch), backend);
}

} // namespace

TEST_CASE("the GPU module key covers the kernel IR, the arch and the backend", "[cache]") {
  auto small = mlp(1);
  auto larger = mlp(3);
  std::string key = keyOf(small->ir(), "sm_90a", GpuBackend::Llvm);
  CHECK(key == keyOf(small->ir(), "sm_90a", GpuBackend::Llvm));
  CHECK(key != keyOf(larger->ir(), "sm_90a", GpuBackend::Llvm));
  CHECK(key != keyOf(small->ir(), "sm_80", GpuBackend::Llvm));
  CHECK(key != keyOf(small->ir(), "sm_90", GpuBackend::Llvm)); // sm_90 vs sm_90a
  CHECK(key != keyOf(small->ir(), "sm_90a", GpuBackend::Nvrtc));
  CHECK(key.starts_with("sm_90a llvm "));
  CHECK_THAT(key, Catch::Contains("kiln 0."));
  CHECK_THAT(key, Catch::Contains("build "));
  CHECK_THAT(key, Catch::Contains("backend llvm 19."));
  CHECK_THAT(key, Catch::Contains("ptxas /"));
  CHECK_THAT(key, Catch::Contains("env KILN_PTXAS="));
  CHECK_THAT(keyOf(small->ir(), "sm_90a", GpuBackend::Nvrtc), Catch::Contains("backend nvrtc "));
  CHECK(compiler::compilerBuildId() != "none");
  // An environment variable that picks the toolchain changes the key.
  setenv("KILN_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
  std::string withEnv = keyOf(small->ir(), "sm_90a", GpuBackend::Nvrtc);
  unsetenv("KILN_LIBDEVICE");
  CHECK(withEnv != keyOf(small->ir(), "sm_90a", GpuBackend::Nvrtc));
}

TEST_CASE("a second compile is a cache hit with identical PTX and cubin", "[cache]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO((backend == GpuBackend::Llvm ? "llvm" : "nvrtc"));
  TempDir dir;
  auto graph = mlp(2);
  CompileOptions options = cudaOptions(dir.path(), backend);
  CompileReport cold, warm, fromDisk;
  auto first = compileGpuKernels(graph->ir(), options, &cold);
  REQUIRE(first);
  CHECK_THAT(cold.kernelCache, Catch::StartsWith("miss (written to "));
  CHECK(cold.warnings.empty());
  CHECK_FALSE(first->cubin.empty()); // ptxas and NVRTC are both present here
  REQUIRE(kiln::test::cacheEntryFiles(dir.path()).size() == 1);

  auto second = compileGpuKernels(graph->ir(), options, &warm);
  REQUIRE(second);
  CHECK(warm.kernelCache == "hit (memory)");
  CHECK(second->ptx == first->ptx);
  CHECK(second->cubin == first->cubin);

  compiler::kernelCacheFor(options).dropMemoryTier();
  auto third = compileGpuKernels(graph->ir(), options, &fromDisk);
  REQUIRE(third);
  CHECK(fromDisk.kernelCache == "hit (disk)");
  CHECK(third->ptx == first->ptx);
  CHECK(third->cubin == first->cubin);
  CHECK(fromDisk.warnings.empty());
}

TEST_CASE("a corrupt entry gives the same PTX again, with a report", "[cache]") {
  TempDir dir;
  auto graph = mlp(2);
  CompileOptions options = cudaOptions(dir.path());
  auto first = compileGpuKernels(graph->ir(), options);
  REQUIRE(first);
  std::vector<fs::path> files = kiln::test::cacheEntryFiles(dir.path());
  REQUIRE(files.size() == 1);
  {
    std::fstream file(files[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(200);
    char byte = 0;
    file.read(&byte, 1);
    byte ^= 0x5a;
    file.seekp(200);
    file.write(&byte, 1);
  }
  compiler::kernelCacheFor(options).dropMemoryTier();
  CompileReport report;
  auto rebuilt = compileGpuKernels(graph->ir(), options, &report);
  REQUIRE(rebuilt);
  CHECK(rebuilt->ptx == first->ptx);
  CHECK(rebuilt->cubin == first->cubin);
  REQUIRE(report.warnings.size() == 1);
  CHECK_THAT(report.warnings[0], Catch::Contains("checksum mismatch"));
  CHECK_THAT(report.warnings[0], Catch::Contains(files[0].filename().string()));
  CHECK_THAT(report.kernelCache, Catch::StartsWith("miss (written"));
  // The rebuilt entry is trusted again.
  compiler::kernelCacheFor(options).dropMemoryTier();
  CompileReport again;
  REQUIRE(compileGpuKernels(graph->ir(), options, &again));
  CHECK(again.kernelCache == "hit (disk)");
  CHECK(again.warnings.empty());
}

TEST_CASE("an unwritable cache directory costs one warning, not the compile", "[cache]") {
  TempDir dir;
  { std::ofstream(dir.path() / "file") << "a regular file"; }
  auto graph = mlp(1);
  CompileOptions options = cudaOptions(dir.path() / "file" / "cache");
  CompileReport report;
  auto kernels = compileGpuKernels(graph->ir(), options, &report);
  REQUIRE(kernels);
  CHECK_FALSE(kernels->ptx.empty());
  CHECK(report.kernelCache == "miss (not written)");
  REQUIRE(report.warnings.size() == 1);
  CHECK_THAT(report.warnings[0], Catch::Contains("kernel cache: cannot create"));
}

TEST_CASE("the cache can be turned off, and an llvm dump still compiles", "[cache]") {
  TempDir dir;
  auto graph = mlp(1);
  CompileOptions options = cudaOptions(dir.path());
  options.useKernelCache = false;
  CompileReport off;
  REQUIRE(compileGpuKernels(graph->ir(), options, &off));
  CHECK(off.kernelCache == "off");
  CHECK(kiln::test::cacheEntryFiles(dir.path()).empty());

  options.useKernelCache = true;
  REQUIRE(compileGpuKernels(graph->ir(), options));
  std::ostringstream dump;
  options.dump = kDumpLlvm | kDumpPtx;
  options.dumpStream = &dump;
  CompileReport dumped;
  REQUIRE(compileGpuKernels(graph->ir(), options, &dumped));
  CHECK_THAT(dumped.kernelCache, Catch::StartsWith("bypassed for the llvm dump"));
  CHECK_THAT(dump.str(), Catch::Contains("NVPTX LLVM IR"));
  CHECK_THAT(dump.str(), Catch::Contains(".target sm_90a"));
}

TEST_CASE("two processes compiling the same model into one cache both succeed", "[cache]") {
  TempDir dir;
  auto graph = mlp(4);
  CompileOptions options = cudaOptions(dir.path());
  // The expected module, from a compile that bypasses the cache.
  CompileOptions uncached = options;
  uncached.useKernelCache = false;
  auto expected = compileGpuKernels(graph->ir(), uncached);
  REQUIRE(expected);

  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto kernels = compileGpuKernels(graph->ir(), options);
      _exit(!kernels ? 2 : kernels->ptx != expected->ptx ? 3 : 0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::vector<fs::path> files = kiln::test::cacheEntryFiles(dir.path());
  REQUIRE(files.size() == 1); // one entry, no temporary file left
  auto listed = runtime::listCacheEntries(dir.path());
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK((*listed)[0].problem.empty());
  CompileReport report;
  auto warm = compileGpuKernels(graph->ir(), options, &report);
  REQUIRE(warm);
  CHECK(report.kernelCache == "hit (disk)");
  CHECK(warm->ptx == expected->ptx);
  CHECK(warm->cubin == expected->cubin);
}
