// The kernel cache behind compile() for the CPU target: what the host object's
// key covers, warm starts from memory and from disk that run bit-identically
// and match the reference, and entries that are corrupt or do not load,
// rebuilt with a report.
#include "CompileTestUtil.h"

#include "compiler/GpuModuleCache.h"
#include "compiler/HostModuleCache.h"
#include "frontend/TempDir.h"
#include "CacheTestUtil.h"
#include "runtime/cache/CacheDirectory.h"
#include "runtime/cache/CacheEntryFile.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kiln::test {
namespace {

namespace fs = std::filesystem;
using kiln::testing::TempDir;

/// y = softmax(relu(x @ w + b)) at odd sizes: a contraction and a row kernel.
struct SmallModel {
  CompileCase c{"cached"};
  SmallModel() {
    Tensor x = c.input("x", {5, 19});
    Tensor w = c.param("w", {19, 13});
    Tensor b = c.param("b", {13});
    c.output("y", softmax(relu(matmul(x, w) + b), -1));
    REQUIRE(c.graph().finalize());
  }
};

CompileOptions cpuOptions(const fs::path &cacheDir) {
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.kernelCacheDir = cacheDir.string();
  return options;
}


std::string readAll(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool sameBytes(const NamedTensors &a, const NamedTensors &b) {
  if (a.size() != b.size())
    return false;
  for (const auto &[name, tensor] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.byteSize() != tensor.byteSize() ||
        std::memcmp(it->second.bytes().data(), tensor.bytes().data(), tensor.byteSize()) != 0)
      return false;
  }
  return true;
}

/// compile() with `options`, run on the model's tensors.
NamedTensors compileAndRun(SmallModel &model, const CompileOptions &options,
                           CompileReport &report) {
  auto compiled = compile(model.c.graph().ir(), options, &report);
  REQUIRE(compiled);
  auto outputs = compiled->run(model.c.tensors());
  REQUIRE(outputs);
  return std::move(*outputs);
}

/// The model compiled once into a fresh cache directory, which then holds one entry.
struct ColdCompiled {
  TempDir dir;
  SmallModel model;
  CompileOptions options = cpuOptions(dir.path());
  NamedTensors outputs;
  fs::path entry;

  ColdCompiled() {
    CompileReport cold;
    outputs = compileAndRun(model, options, cold);
    std::vector<fs::path> files = cacheEntryFiles(dir.path());
    REQUIRE(files.size() == 1);
    entry = files[0];
  }
};

} // namespace

TEST_CASE("the host object key covers the kernel IR and the CPU target", "[cache]") {
  codegen::CpuTarget target = codegen::hostCpuTarget();
  kir::Kernel kernel;
  kernel.name = "k0_example";
  std::vector<kir::Kernel> one{kernel};
  std::string key = compiler::hostModuleCacheKey(one, target);
  CHECK(key == compiler::hostModuleCacheKey(one, target));
  CHECK(key.starts_with(fmt::format("cpu {} 1 kernel: k0_example\n", target.cpuName)));
  CHECK_THAT(key, Catch::Contains("kiln 0."));
  CHECK_THAT(key, Catch::Contains("build " + compiler::compilerBuildId()));
  CHECK_THAT(key, Catch::Contains("backend llvm-host 19."));
  CHECK_THAT(key, Catch::Contains("target " + target.cacheKey()));

  std::vector<kir::Kernel> renamed = one;
  renamed[0].name = "k0_other";
  CHECK(key != compiler::hostModuleCacheKey(renamed, target));
  codegen::CpuTarget fewerCores = target;
  fewerCores.cores = target.cores + 1;
  CHECK(key != compiler::hostModuleCacheKey(one, fewerCores));
  codegen::CpuTarget otherFeatures = target;
  otherFeatures.features += ",-avx512f";
  CHECK(key != compiler::hostModuleCacheKey(one, otherFeatures));
}

TEST_CASE("a warm CPU compile links the cached object and runs bit-identically", "[cache]") {
  TempDir dir;
  SmallModel model;
  CompileOptions options = cpuOptions(dir.path());
  NamedTensors reference = model.c.reference();
  CompileReport cold, warm, fromDisk;
  NamedTensors first = compileAndRun(model, options, cold);
  CHECK_THAT(cold.kernelCache, Catch::StartsWith("miss (written to "));
  CHECK(cold.warnings.empty());
  checkOutputsMatch(model.c.graph().ir(), first, reference);
  std::vector<fs::path> files = cacheEntryFiles(dir.path());
  REQUIRE(files.size() == 1);
  auto key = runtime::readCacheEntryKey(readAll(files[0]));
  REQUIRE(key);
  CHECK(key->starts_with("cpu "));

  NamedTensors second = compileAndRun(model, options, warm);
  CHECK(warm.kernelCache == "hit (memory)");
  CHECK(sameBytes(first, second));

  compiler::kernelCacheFor(options).dropMemoryTier();
  NamedTensors third = compileAndRun(model, options, fromDisk);
  CHECK(fromDisk.kernelCache == "hit (disk)");
  CHECK(fromDisk.warnings.empty());
  CHECK(sameBytes(first, third));
  // Only the code is cached: the report still counts the kernels lowered.
  CHECK(fromDisk.numKernels == cold.numKernels);
}

TEST_CASE("a corrupt host object entry is reported and rebuilt", "[cache]") {
  ColdCompiled c;
  {
    std::fstream file(c.entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-64, std::ios::end); // inside the object code
    char byte = 0;
    file.read(&byte, 1);
    byte ^= 0x5a;
    file.seekp(-64, std::ios::end);
    file.write(&byte, 1);
  }
  compiler::kernelCacheFor(c.options).dropMemoryTier();
  CompileReport report;
  NamedTensors rebuilt = compileAndRun(c.model, c.options, report);
  CHECK(sameBytes(c.outputs, rebuilt));
  REQUIRE(report.warnings.size() == 1);
  CHECK_THAT(report.warnings[0], Catch::Contains("checksum mismatch"));
  CHECK_THAT(report.warnings[0], Catch::Contains(c.entry.filename().string()));
  CHECK_THAT(report.kernelCache, Catch::StartsWith("miss (written"));

  compiler::kernelCacheFor(c.options).dropMemoryTier();
  CompileReport again;
  compileAndRun(c.model, c.options, again);
  CHECK(again.kernelCache == "hit (disk)");
  CHECK(again.warnings.empty());
}

TEST_CASE("an intact entry whose object does not load is reported and replaced", "[cache]") {
  ColdCompiled c;
  auto key = runtime::readCacheEntryKey(readAll(c.entry));
  REQUIRE(key);
  // A well-formed entry under the right key whose object is not an ELF file.
  runtime::CacheEntry bogus;
  bogus.sections["object"] = "not an object file";
  runtime::KernelCache &cache = compiler::kernelCacheFor(c.options);
  REQUIRE(cache.store(*key, bogus).writtenToDisk);
  cache.dropMemoryTier();

  CompileReport report;
  NamedTensors rebuilt = compileAndRun(c.model, c.options, report);
  CHECK(sameBytes(c.outputs, rebuilt));
  REQUIRE(report.warnings.size() == 1);
  CHECK_THAT(report.warnings[0], Catch::Contains("did not load"));
  CHECK_THAT(report.warnings[0], Catch::Contains(c.entry.filename().string()));
  CHECK_THAT(report.warnings[0], Catch::Contains("cannot load the object code"));
  CHECK_THAT(report.kernelCache, Catch::StartsWith("miss (written"));

  cache.dropMemoryTier();
  CompileReport again;
  compileAndRun(c.model, c.options, again);
  CHECK(again.kernelCache == "hit (disk)");
  CHECK(again.warnings.empty());
}

TEST_CASE("the CPU cache can be turned off, and an llvm dump comes with a cached module",
          "[cache]") {
  TempDir dir;
  SmallModel model;
  CompileOptions options = cpuOptions(dir.path());
  options.useKernelCache = false;
  CompileReport off;
  compileAndRun(model, options, off);
  CHECK(off.kernelCache == "off");
  CHECK(cacheEntryFiles(dir.path()).empty());

  options.useKernelCache = true;
  CompileReport cold;
  compileAndRun(model, options, cold);
  CHECK_THAT(cold.kernelCache, Catch::StartsWith("miss (written to "));
  std::ostringstream dump;
  options.dump = kDumpLlvm;
  options.dumpStream = &dump;
  CompileReport dumped;
  compileAndRun(model, options, dumped);
  CHECK(dumped.kernelCache == "hit (memory)");
  CHECK_THAT(dump.str(), Catch::Contains("define void @k0_"));
  CHECK(cacheEntryFiles(dir.path()).size() == 1);
}

} // namespace kiln::test
