// AOT bundles end to end: a CPU bundle written, loaded and run equals
// compile()'s outputs bit for bit (and the reference within tolerance), with
// and without weights; a corrupt, truncated or foreign-CPU bundle is refused
// naming the file; a failed write leaves nothing behind; a GPU bundle for
// sm_80 and sm_90a holds cubin and PTX for each and picks the right one; and
// kiln-run-bundle (kiln_rt alone) runs a CPU bundle in its own process.
#include "CompileTestUtil.h"
#include "ScopedEnv.h"
#include "compiler/aot/AotBundle.h"
#include "compiler/aot/HostLinker.h"
#include "frontend/TempDir.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/GpuArchChoice.h"
#include "runtime/bundle/HostCpu.h"
#include "runtime/bundle/PlanCodec.h"
#include "runtime/cache/SectionFile.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

namespace kiln::test {
namespace {

namespace fs = std::filesystem;
using namespace runtime::bundle;
using kiln::testing::TempDir;

/// h = relu(x @ w + b), y = softmax(h) at sizes off every vector width.
struct DenseCase {
  CompileCase c{"aot_dense"};
  DenseCase() {
    Tensor x = c.input("x", {7, 13});
    Tensor w = c.param("w", {13, 9});
    Tensor b = c.param("b", {9});
    Tensor h = relu(matmul(x, w) + b);
    c.output("h", h);
    c.output("y", softmax(h));
    REQUIRE(c.graph().finalize());
  }
  const ir::Graph &graph() { return c.graph().ir(); }
  NamedTensors inputsOnly() {
    NamedTensors all = c.tensors();
    std::erase_if(all, [&](const auto &item) { return c.graph().paramValues().contains(item.first); });
    return all;
  }
};

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  // An empty tensor may have no storage at all: memcmp must not see its null pointer.
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.byteSize() == 0 ||
          std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0);
}

void checkSameOutputs(const NamedTensors &actual, const NamedTensors &expected) {
  REQUIRE(actual.size() == expected.size());
  for (const auto &[name, tensor] : expected) {
    INFO("output " << name);
    REQUIRE(actual.contains(name));
    CHECK(sameBytes(actual.at(name), tensor));
  }
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

compiler::AotOptions cpuOptions() {
  compiler::AotOptions options;
  options.target = TargetKind::Cpu;
  return options;
}

} // namespace

TEST_CASE("a CPU bundle runs bit for bit like compile(), with and without weights", "[aot]") {
  DenseCase dense;
  // compile()'s outputs, checked against the reference within tolerance.
  NamedTensors compiled = dense.c.check();
  REQUIRE_FALSE(compiled.empty());

  compiler::AotOptions options = cpuOptions();
  compiler::AotReport report;
  auto bytes = compiler::buildBundle(dense.graph(), options, &report);
  REQUIRE(bytes);
  CHECK(report.numKernels >= 1);
  CHECK(report.bytes == bytes->size());

  auto loaded = loadBundleFromBytes(*bytes, {}, "dense.kiln");
  REQUIRE(loaded);
  CHECK_FALSE(loaded->weightsBound);
  // No tuning database in the test's cache: no records, an empty section.
  CHECK(report.records.empty());
  CHECK(loaded->tuningRecords.empty());
  CHECK(loaded->meta.model == "aot_dense");
  CHECK(loaded->model.device() == nullptr);
  RunOptions poisoned;
  poisoned.poisonBuffers = true;
  auto outputs = loaded->model.run(dense.c.tensors(), poisoned);
  REQUIRE(outputs);
  checkSameOutputs(*outputs, compiled);

  // With the weights stored, a run needs only the inputs.
  options.weights = dense.c.graph().paramValues();
  auto withWeights = compiler::buildBundle(dense.graph(), options);
  REQUIRE(withWeights);
  auto model = loadBundleFromBytes(*withWeights);
  REQUIRE(model);
  CHECK(model->weightsBound);
  auto fromInputs = model->model.run(dense.inputsOnly(), poisoned);
  REQUIRE(fromInputs);
  checkSameOutputs(*fromInputs, compiled);

  // The second write compiled the same graph again into the same code and
  // plan: bundles are reproducible.
  auto first = runtime::decodeSectionFile(*bytes, kBundleFormat);
  auto second = runtime::decodeSectionFile(*withWeights, kBundleFormat);
  REQUIRE(first);
  REQUIRE(second);
  for (std::string_view section : {kHostCodeSection, kHostPlanSection, kMetaSection}) {
    INFO(section);
    REQUIRE(first->section(section));
    CHECK(*first->section(section) == *second->section(section));
  }
}

TEST_CASE("a CPU bundle file refuses corruption, truncation and a CPU without its features",
          "[aot]") {
  DenseCase dense;
  TempDir dir;
  std::string path = dir.file("dense.kiln");
  REQUIRE(compiler::writeBundle(dense.graph(), cpuOptions(), path));
  const std::string bytes = readFile(path);
  REQUIRE(loadBundle(path));

  // A CPU lacking a feature the code was compiled for is named.
  std::set<std::string> lacking = hostCpuFeatures();
  REQUIRE(lacking.erase("sse2") == 1); // every x86-64 bundle is compiled with SSE2
  BundleLoadOptions lackingSse2;
  lackingSse2.assumeCpuFeatures = &lacking;
  auto foreign = loadBundle(path, lackingSse2);
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(foreign.error().message(), Catch::StartsWith(fmt::format("bundle '{}'", path)) &&
                                            Catch::Contains("lacks: sse2"));

  // A corrupted byte is a checksum error naming the file.
  std::string corrupt = bytes;
  corrupt[bytes.size() / 2] ^= 0x01;
  writeFile(path, corrupt);
  auto corrupted = loadBundle(path);
  REQUIRE_FALSE(corrupted);
  CHECK(corrupted.error().code() == ErrorCode::FormatError);
  CHECK(corrupted.error().message() == fmt::format("bundle '{}': checksum mismatch", path));

  // A truncated file is an error naming the file.
  writeFile(path, std::string_view(bytes).substr(0, bytes.size() * 2 / 3));
  auto truncated = loadBundle(path);
  REQUIRE_FALSE(truncated);
  CHECK_THAT(truncated.error().message(),
             Catch::StartsWith(fmt::format("bundle '{}': truncated", path)));
}

TEST_CASE("a failed bundle write leaves no file and keeps an older one", "[aot]") {
  DenseCase dense;
  TempDir dir;
  std::string path = dir.file("model.kiln");
  writeFile(path, "an older bundle");
  compiler::AotOptions options = cpuOptions();
  options.weights = dense.c.graph().paramValues();
  options.weights->emplace("not_a_param", HostTensor(DType::F32, {2}));
  auto written = compiler::writeBundle(dense.graph(), options, path);
  REQUIRE_FALSE(written);
  CHECK(written.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(written.error().message(), Catch::Contains("weight not a parameter of the model: "
                                                        "'not_a_param'"));
  CHECK(readFile(path) == "an older bundle");
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  // (An unwritable destination: BundleFormatTest's writeBundleFile cases.)
}

TEST_CASE("weights given to a bundle must be every parameter, typed as the model's", "[aot]") {
  DenseCase dense;
  compiler::AotOptions options = cpuOptions();
  auto errorOf = [&](NamedTensors weights) {
    options.weights = std::move(weights);
    auto bytes = compiler::buildBundle(dense.graph(), options);
    REQUIRE_FALSE(bytes);
    CHECK(bytes.error().code() == ErrorCode::InvalidArgument);
    return bytes.error().message();
  };
  NamedTensors params = dense.c.graph().paramValues();
  // An empty set (an empty --weights file) is no set of weights: it would run on random ones.
  CHECK_THAT(errorOf({}), Catch::Contains("2 of the model's 2 parameters missing: 'w' (f32[13,9]), "
                                          "'b' (f32[9])"));
  NamedTensors partial = params;
  partial.erase("b");
  partial.emplace("bias", HostTensor(DType::F32, {9}));
  CHECK_THAT(errorOf(partial), Catch::Contains("1 of the model's 2 parameters missing: 'b' "
                                               "(f32[9])") &&
                                   Catch::Contains("weight not a parameter of the model: 'bias'"));
  NamedTensors retyped = params;
  retyped.at("w") = HostTensor(DType::F16, {13, 9});
  CHECK_THAT(errorOf(retyped), Catch::Contains("weight 'w' is f16[13,9], the parameter is "
                                               "f32[13,9]"));
  options.weights = params;
  CHECK(compiler::buildBundle(dense.graph(), options));
}

TEST_CASE("the host linker: $KILN_LLD is honoured, and a failed link carries its log", "[aot]") {
  {
    ScopedEnv missing("KILN_LLD", "/nonexistent/ld.lld");
    auto lld = compiler::findLld();
    REQUIRE_FALSE(lld);
    CHECK(lld.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(lld.error().message(), Catch::Contains("$KILN_LLD is '/nonexistent/ld.lld'"));
  }
  REQUIRE(compiler::findLld()); // lld-19 is a build dependency (scripts/setup.sh)
  auto linked = compiler::linkSharedObject("not an object file");
  REQUIRE_FALSE(linked);
  CHECK(linked.error().code() == ErrorCode::CompileError);
  REQUIRE_FALSE(linked.error().notes().empty());
  CHECK_FALSE(linked.error().notes()[0].empty());
}

TEST_CASE("a GPU bundle for sm_80 and sm_90a holds cubin and PTX for each and picks one",
          "[aot]") {
  DenseCase dense;
  compiler::AotOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArchs = {"sm_80", "sm_90a"};
  options.compile.useKernelCache = false; // never write to the user's cache from a test
  compiler::AotReport report;
  auto bytes = compiler::buildBundle(dense.graph(), options, &report);
  REQUIRE(bytes);
  CHECK(report.target == "cuda sm_80,sm_90a");
  REQUIRE(checkBundle(*bytes));

  auto view = runtime::decodeSectionFile(*bytes, kBundleFormat);
  REQUIRE(view);
  std::vector<BundleArch> archs;
  for (std::string arch : {"sm_80", "sm_90a"}) {
    INFO(arch);
    const std::string_view *ptx = view->section(gpuSectionName(arch, "ptx"));
    const std::string_view *cubin = view->section(gpuSectionName(arch, "cubin"));
    const std::string_view *plan = view->section(gpuSectionName(arch, "plan"));
    REQUIRE(ptx);
    REQUIRE(plan);
    CHECK_THAT(std::string(*ptx), Catch::Contains(".target " + arch));
    REQUIRE(cubin); // ptxas is installed with the CUDA toolkit
    CHECK(cubin->substr(0, 4) == "\x7f" "ELF");
    auto decoded = decodePlan(*plan, "plan", /*requireDims=*/true);
    REQUIRE(decoded);
    CHECK(decoded->plan.steps.size() == static_cast<size_t>(report.numKernels));
    archs.push_back({arch, true});
  }
  auto onH100 = chooseGpuArch(90, archs);
  REQUIRE(onH100);
  CHECK(archs[onH100->index].name == "sm_90a");
  CHECK(onH100->useCubin);
  auto onA10 = chooseGpuArch(86, archs);
  REQUIRE(onA10);
  CHECK(archs[onA10->index].name == "sm_80");
  CHECK(onA10->useCubin);
  auto onNewer = chooseGpuArch(100, archs);
  REQUIRE(onNewer);
  CHECK_FALSE(onNewer->useCubin);

  ScopedEnv noDriver("KILN_LIBCUDA", "/nonexistent/libcuda.so.1");
  auto loaded = loadBundleFromBytes(*bytes, {}, "gpu.kiln");
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(loaded.error().message(), Catch::Contains("a cuda bundle needs a GPU"));
}

TEST_CASE("kiln-run-bundle runs a CPU bundle with kiln_rt alone, in its own process", "[aot]") {
  DenseCase dense;
  TempDir dir;
  std::string path = dir.file("dense.kiln");
  compiler::AotOptions options = cpuOptions();
  options.weights = dense.c.graph().paramValues();
  REQUIRE(compiler::writeBundle(dense.graph(), options, path));

  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void *>(&checkBundle), &info) != 0);
  fs::path tool = fs::canonical(info.dli_fname).parent_path() / "kiln-run-bundle";
  REQUIRE(fs::exists(tool));
  std::string command = fmt::format("'{}' '{}' --iterations 2 2>&1", tool.string(), path);
  FILE *pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[512];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, got);
  int status = pclose(pipe);
  INFO(output);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(output, Catch::Contains("weights bound") && Catch::Contains("output h: f32[7,9]") &&
                         Catch::Contains("output y: f32[7,9]") && Catch::Contains("load:"));
}

} // namespace kiln::test
