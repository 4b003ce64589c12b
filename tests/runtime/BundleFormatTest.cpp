// AOT bundles at the runtime level (no compiler): the container's checks
// (corrupt byte, truncation, other version, bad magic), launch-plan and tensor
// round trips and validation, CPU feature checks, GPU architecture choice,
// and the "no CUDA driver" path of loading a GPU bundle.
#include "ScopedEnv.h"
#include "frontend/TempDir.h"
#include "runtime/RunSizeBinder.h"
#include "runtime/bundle/BundleFile.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/GpuArchChoice.h"
#include "runtime/bundle/HostCpu.h"
#include "runtime/bundle/PlanCodec.h"
#include "runtime/bundle/SizeCodec.h"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::runtime::bundle;
using kiln::test::ScopedEnv;
using kiln::testing::TempDir;

namespace {

PlanBuffer buffer(std::string name, std::vector<int64_t> shape, Storage storage, int binding = -1,
                  int64_t offset = 0) {
  PlanBuffer b;
  b.name = std::move(name);
  b.dtype = DType::F32;
  b.shape = std::move(shape);
  b.bytes = 4;
  for (int64_t dim : b.shape)
    b.bytes *= dim;
  b.storage = storage;
  b.binding = binding;
  b.arenaOffset = offset;
  return b;
}

/// y = k1(k0(x, w), c): an input, a parameter, a constant, an arena buffer, an output.
LaunchPlan samplePlan() {
  LaunchPlan plan;
  plan.buffers = {buffer("x", {3, 5}, Storage::Input, 0), buffer("w", {5}, Storage::Param, 0),
                  buffer("c", {3, 5}, Storage::Constant, 0),
                  buffer("t", {3, 5}, Storage::Arena, -1, 64), buffer("y", {3, 5}, Storage::Output, 0)};
  plan.buffers.push_back(buffer("y_view", {15}, Storage::Alias));
  plan.buffers.back().aliasOf = 4;
  plan.steps = {PlanStep{"k0_mul", {}, {0, 1, 3}, 15, 180},
                PlanStep{"k1_add", {}, {3, 2, 4}, 15, 180}};
  plan.inputs = {{"x", 0}};
  plan.params = {{"w", 1}};
  plan.outputs = {{"y", 4}, {"y_flat", 5}};
  Rng rng(7);
  plan.constants = {HostTensor::randomNormal(DType::F32, {3, 5}, rng)};
  plan.arenaBytes = 128;
  plan.unplannedBytes = 60;
  return plan;
}

/// y = k1(k0(x, sizes), sizes) for x: f32[N,5] with N in [1, max], and an intermediate t of
/// (N*5)/2 elements: a symbolic plan (max 1: the same plan specialized at N = 1, static).
LaunchPlan symbolicPlan(int64_t max) {
  ir::SizeSymbol symbol{"N", 1, max};
  ir::SizeExpr n = ir::SizeExpr::symbol(symbol);
  ir::SizeExpr half = *ir::floorDiv(*ir::multiply(n, 5), 2);
  bool symbolic = max > 1;
  LaunchPlan plan;
  plan.buffers = {buffer("x", {max, 5}, Storage::Input, 0), buffer("sizes", {1}, Storage::Sizes),
                  buffer("y", {max, 5}, Storage::Output, 0),
                  buffer("t", {max * 5 / 2}, Storage::Arena, -1, 0)};
  plan.buffers[1].dtype = DType::I64;
  plan.buffers[1].bytes = 8;
  if (symbolic) {
    plan.symbols = {symbol};
    plan.sizesBuffer = 1;
    plan.buffers[0].sizes = {n, 5};
    plan.buffers[2].sizes = {n, 5};
    plan.buffers[3].sizes = {half};
  } else {
    plan.buffers.erase(plan.buffers.begin() + 1);
    plan.buffers[1].binding = 0;
  }
  int y = symbolic ? 2 : 1, t = symbolic ? 3 : 2;
  plan.steps = {PlanStep{"k0", {}, symbolic ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 2}},
                PlanStep{"k1", {}, symbolic ? std::vector<int>{3, 1, 2} : std::vector<int>{2, 1}}};
  plan.inputs = {{"x", 0}};
  plan.outputs = {{"y", y}};
  plan.arenaBytes = plan.buffers[static_cast<size_t>(t)].bytes;
  return plan;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  // An empty tensor may have no storage at all: memcmp must not see its null pointer.
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.byteSize() == 0 ||
          std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0);
}

/// A GPU bundle with hand-made plans and stand-in code for two architectures.
BundleContents sampleGpuBundle() {
  BundleContents contents;
  contents.meta.kilnVersion = "test";
  contents.meta.model = "sample";
  contents.meta.target = BundleTarget::Cuda;
  for (std::string arch : {"sm_80", "sm_90a"}) {
    GpuArchCode code;
    code.arch = arch;
    code.plan = samplePlan();
    LaunchDims dims;
    dims.grid = {2, 1, 1};
    dims.block = {128, 1, 1};
    code.stepDims = {dims, dims};
    code.ptx = "// ptx for " + arch;
    code.cubin = arch == "sm_90a" ? std::string("\x7f" "ELF cubin") : std::string();
    contents.meta.gpuArchs.push_back(arch);
    contents.gpu.push_back(std::move(code));
  }
  Rng rng(3);
  contents.weights.emplace("w", HostTensor::randomNormal(DType::F32, {5}, rng));
  contents.tuningRecords = "{\"record\": 1}\n";
  return contents;
}

} // namespace

TEST_CASE("a launch plan survives encoding and decoding field for field", "[bundle]") {
  LaunchPlan plan = samplePlan();
  LaunchDims dims;
  dims.grid = {3, 2, 1};
  dims.block = {64, 2, 1};
  dims.sharedBytes = 16;
  auto decoded = decodePlan(encodePlan(plan, {dims, dims}), "plan", /*requireDims=*/true);
  REQUIRE(decoded);
  const LaunchPlan &back = decoded->plan;
  REQUIRE(back.buffers.size() == plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    CHECK(back.buffers[i].name == plan.buffers[i].name);
    CHECK(back.buffers[i].shape == plan.buffers[i].shape);
    CHECK(back.buffers[i].bytes == plan.buffers[i].bytes);
    CHECK(back.buffers[i].storage == plan.buffers[i].storage);
    CHECK(back.buffers[i].arenaOffset == plan.buffers[i].arenaOffset);
    CHECK(back.buffers[i].binding == plan.buffers[i].binding);
    CHECK(back.buffers[i].aliasOf == plan.buffers[i].aliasOf);
  }
  REQUIRE(back.steps.size() == 2);
  CHECK(back.steps[1].kernelName == "k1_add");
  CHECK(back.steps[1].args == std::vector<int>{3, 2, 4});
  CHECK(back.steps[0].flops == 15);
  CHECK(back.steps[0].bytesMoved == 180);
  REQUIRE(decoded->stepDims[1]);
  CHECK(decoded->stepDims[1]->grid == dims.grid);
  CHECK(decoded->stepDims[1]->block == dims.block);
  CHECK(decoded->stepDims[1]->sharedBytes == 16);
  CHECK(back.outputs[1].name == "y_flat");
  REQUIRE(back.constants.size() == 1);
  CHECK(sameBytes(back.constants[0], plan.constants[0]));
  CHECK(back.arenaBytes == 128);
  CHECK(back.unplannedBytes == 60);

  // Tensor maps travel with the dims; one naming a parameter the step lacks is refused.
  LaunchDims mapped = dims;
  mapped.tensorMaps.push_back({1, DType::BF16, {200, 64, 3}, {208, 208 * 64}, {64, 64, 1}, true});
  auto withMaps = decodePlan(encodePlan(plan, {dims, mapped}), "plan", true);
  REQUIRE(withMaps);
  REQUIRE(withMaps->stepDims[1]);
  CHECK(withMaps->stepDims[1]->tensorMaps == mapped.tensorMaps);
  CHECK(withMaps->stepDims[0]->tensorMaps.empty());
  LaunchDims outside = dims;
  outside.tensorMaps.push_back({7, DType::BF16, {64}, {}, {64}, false});
  auto refused = decodePlan(encodePlan(plan, {dims, outside}), "plan", true);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Contains("malformed tensor map"));
  LaunchDims emptyBox = dims; // a corrupt box the driver would refuse only at launch
  emptyBox.tensorMaps.push_back({1, DType::BF16, {64, 8}, {64}, {0, 8}, true});
  auto noBox = decodePlan(encodePlan(plan, {dims, emptyBox}), "plan", true);
  REQUIRE_FALSE(noBox);
  CHECK_THAT(noBox.error().message(), Catch::Contains("malformed tensor map"));
  LaunchDims oddRows = dims; // rows of 70 bf16: 140 bytes, not a multiple of 16
  oddRows.tensorMaps.push_back({1, DType::BF16, {70, 8}, {70}, {64, 8}, true});
  auto odd = decodePlan(encodePlan(plan, {dims, oddRows}), "plan", true);
  REQUIRE_FALSE(odd);
  CHECK_THAT(odd.error().message(), Catch::Contains("steps dim 1 by 70 elements of 2 bytes"));

  // A host plan has no dims, and a GPU plan must have them.
  CHECK(decodePlan(encodePlan(plan), "plan", false));
  auto missingDims = decodePlan(encodePlan(plan), "cuda.sm_80.plan", true);
  REQUIRE_FALSE(missingDims);
  CHECK_THAT(missingDims.error().message(), Catch::Contains("cuda.sm_80.plan") &&
                                                Catch::Contains("no launch dims"));
}

TEST_CASE("an all_reduce step keeps its kind and op and carries no launch dims", "[bundle]") {
  LaunchPlan plan = samplePlan();
  PlanStep reduce{"t_all_reduce", {}, {3, 3}, 0, 120};
  reduce.kind = StepKind::AllReduce;
  reduce.reduceOp = dist::ReduceOp::Mean;
  plan.steps.insert(plan.steps.begin() + 1, reduce);
  LaunchDims dims;
  dims.grid = {1, 1, 1};
  dims.block = {32, 1, 1};
  // A device plan: kernels need launch dims, the collective has none.
  auto decoded = decodePlan(encodePlan(plan, {dims, dims, dims}), "plan", /*requireDims=*/true);
  REQUIRE(decoded);
  REQUIRE(decoded->plan.steps.size() == 3);
  const PlanStep &back = decoded->plan.steps[1];
  CHECK(back.kind == StepKind::AllReduce);
  CHECK(back.reduceOp == dist::ReduceOp::Mean);
  CHECK(back.kernelName == "t_all_reduce");
  CHECK(back.args == std::vector<int>{3, 3});
  CHECK_FALSE(decoded->stepDims[1]);
  CHECK(decoded->plan.steps[0].kind == StepKind::Kernel);
  CHECK(decoded->stepDims[2]);
  // A host plan round-trips the same way.
  auto host = decodePlan(encodePlan(plan), "plan", /*requireDims=*/false);
  REQUIRE(host);
  CHECK(host->plan.steps[1].kind == StepKind::AllReduce);
  CHECK(host->plan.steps[2].kind == StepKind::Kernel);

  plan.steps[1].args = {3};
  auto invalid = validatePlan(plan);
  REQUIRE_FALSE(invalid);
  CHECK_THAT(invalid.error().message(), Catch::Contains("all_reduce step 1 ('t_all_reduce') passes 1 buffers, not 2"));
}

TEST_CASE("a plan that indexes outside itself is rejected with what is wrong", "[bundle]") {
  auto rejects = [](LaunchPlan plan, const std::string &expected) {
    auto decoded = decodePlan(encodePlan(plan), "plan", false);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().code() == ErrorCode::FormatError);
    CHECK_THAT(decoded.error().message(), Catch::Contains(expected));
  };
  {
    LaunchPlan plan = samplePlan();
    plan.steps[0].args[1] = 99;
    rejects(plan, "passes buffer 99 of 6");
  }
  {
    LaunchPlan plan = samplePlan();
    plan.buffers[3].arenaOffset = 100; // 60 bytes at 100 overrun the 128-byte arena
    rejects(plan, "overruns the 128-byte arena");
  }
  {
    LaunchPlan plan = samplePlan();
    plan.buffers[5].aliasOf = 5;
    rejects(plan, "not an earlier buffer");
  }
  {
    LaunchPlan plan = samplePlan();
    plan.buffers[1].binding = 3;
    rejects(plan, "names parameter 3 of 1");
  }
  {
    LaunchPlan plan = samplePlan();
    plan.buffers[0].bytes = 8;
    rejects(plan, "its type needs 60");
  }
  {
    LaunchPlan plan = samplePlan();
    plan.outputs[0].buffer = -1;
    rejects(plan, "output 'y' names buffer -1");
  }
  // A count larger than the bytes left is an error before any allocation.
  std::string bytes = encodePlan(samplePlan());
  bytes[4] = '\xff'; // after the size symbols' count
  bytes[5] = '\xff';
  bytes[6] = '\xff';
  bytes[7] = '\x7f';
  auto huge = decodePlan(bytes, "plan", false);
  REQUIRE_FALSE(huge);
  CHECK_THAT(huge.error().message(), Catch::Contains("the buffer count is 2147483647"));
}

TEST_CASE("named tensors round trip; duplicates and wrong sizes are rejected", "[bundle]") {
  Rng rng(11);
  NamedTensors tensors;
  tensors.emplace("a", HostTensor::randomNormal(DType::BF16, {2, 3}, rng));
  tensors.emplace("b", HostTensor::randomNormal(DType::F64, {}, rng));
  tensors.emplace("empty", HostTensor(DType::I32, {0, 4}));
  auto back = decodeTensors(encodeTensors(tensors), "weights");
  REQUIRE(back);
  REQUIRE(back->size() == 3);
  for (const auto &[name, tensor] : tensors)
    CHECK(sameBytes(back->at(name), tensor));
  std::string bytes = encodeTensors(tensors);
  auto cut = decodeTensors(std::string_view(bytes).substr(0, bytes.size() - 3), "weights");
  REQUIRE_FALSE(cut);
  CHECK_THAT(cut.error().message(), Catch::Contains("section 'weights'"));
}

TEST_CASE("a bundle's container rejects corruption, truncation, other versions, bad magic",
          "[bundle]") {
  std::string bytes = encodeBundle(sampleGpuBundle());
  REQUIRE(checkBundle(bytes));
  auto info = inspectBundle(bytes);
  REQUIRE(info);
  CHECK(info->meta.gpuArchs == std::vector<std::string>{"sm_80", "sm_90a"});
  std::vector<std::string> names;
  for (const auto &section : info->sections)
    names.push_back(section.first);
  CHECK(names == std::vector<std::string>{"cuda.sm_80.plan", "cuda.sm_80.ptx", "cuda.sm_90a.cubin",
                                          "cuda.sm_90a.plan", "cuda.sm_90a.ptx", "meta", "tuning",
                                          "weights"});

  SECTION("a flipped byte anywhere is a checksum mismatch naming the bundle") {
    for (size_t at : {size_t{40}, bytes.size() / 2, bytes.size() - 20}) {
      std::string corrupt = bytes;
      corrupt[at] = static_cast<char>(corrupt[at] ^ 0x20);
      auto loaded = loadBundleFromBytes(corrupt, {}, "model.kiln");
      REQUIRE_FALSE(loaded);
      CHECK(loaded.error().code() == ErrorCode::FormatError);
      CHECK_THAT(loaded.error().message(), Catch::StartsWith("bundle 'model.kiln': "));
      // A flipped length byte may read as truncated; anything else is a checksum mismatch.
      CHECK_THAT(loaded.error().message(),
                 Catch::Contains("checksum mismatch") || Catch::Contains("truncated"));
    }
    std::string corrupt = bytes;
    corrupt[bytes.size() / 2] ^= 1;
    CHECK_THAT(checkBundle(corrupt).error().message(), Catch::Contains("checksum mismatch"));
  }
  SECTION("every truncation is an error") {
    for (size_t length : {size_t{0}, size_t{5}, size_t{12}, size_t{30}, bytes.size() / 3,
                          bytes.size() - 1}) {
      auto checked = checkBundle(std::string_view(bytes).substr(0, length));
      REQUIRE_FALSE(checked);
      CHECK_THAT(checked.error().message(),
                 Catch::Contains("truncated") || Catch::Contains("checksum mismatch"));
    }
    CHECK_THAT(checkBundle(std::string_view(bytes).substr(0, bytes.size() / 3)).error().message(),
               Catch::Contains("truncated"));
  }
  SECTION("another format version is named along with this kiln's") {
    std::string other = bytes;
    const auto newer = static_cast<char>(kBundleFormatVersion + 1);
    other[kBundleMagic.size()] = newer; // the little-endian version after the magic
    auto loaded = loadBundleFromBytes(other, {}, "new.kiln");
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().message() ==
          fmt::format("bundle 'new.kiln': format version {} (this kiln reads {})",
                      kBundleFormatVersion + 1, kBundleFormatVersion));
  }
  SECTION("a file that is not a bundle says so") {
    CHECK_THAT(checkBundle("KILNKC\r\n and more bytes than a header").error().message(),
               Catch::Contains("not a kiln bundle"));
  }
}

TEST_CASE("bundle files are written atomically and unwritable paths are errors", "[bundle]") {
  TempDir dir;
  std::string path = dir.file("model.kiln");
  std::string bytes = encodeBundle(sampleGpuBundle());
  REQUIRE(writeBundleFile(path, bytes));
  std::ifstream in(path, std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(back == bytes);

  // A directory that does not exist, and one that is a file.
  for (std::string bad : {dir.file("missing/model.kiln"), path + "/inside.kiln"}) {
    auto written = writeBundleFile(bad, bytes);
    REQUIRE_FALSE(written);
    CHECK(written.error().code() == ErrorCode::IOError);
    CHECK_THAT(written.error().message(), Catch::Contains(bad));
  }
  // Nothing but the bundle in the directory: no temporary file left behind.
  int files = 0;
  for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
    ++files;
  CHECK(files == 1);

  auto missing = loadBundle(dir.file("absent.kiln"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == ErrorCode::NotFound);
  CHECK_THAT(missing.error().message(), Catch::Contains("absent.kiln"));
}

TEST_CASE("a GPU bundle without a CUDA driver fails to load saying why", "[bundle]") {
  ScopedEnv forced("KILN_LIBCUDA", "/nonexistent/libcuda.so.1");
  auto loaded = loadBundleFromBytes(encodeBundle(sampleGpuBundle()), {}, "gpu.kiln");
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(loaded.error().message(), Catch::StartsWith("bundle 'gpu.kiln': a cuda bundle needs "
                                                         "a GPU: no usable CUDA driver"));
}

TEST_CASE("the GPU architecture a device loads: cubin, PTX, or an error listing both sides",
          "[bundle]") {
  std::vector<BundleArch> archs = {{"sm_80", true}, {"sm_90a", true}};
  struct Case {
    int deviceSm;
    size_t index;
    bool cubin;
  };
  for (Case c : {Case{90, 1, true}, Case{80, 0, true}, Case{86, 0, true}, Case{89, 0, true},
                 Case{100, 0, false}, Case{120, 0, false}}) {
    CAPTURE(c.deviceSm);
    auto choice = chooseGpuArch(c.deviceSm, archs);
    REQUIRE(choice);
    CHECK(choice->index == c.index);
    CHECK(choice->useCubin == c.cubin);
  }
  CHECK(chooseGpuArch(100, archs)->reason == "PTX for compute_80 (compiled by the driver for sm_100)");
  CHECK(chooseGpuArch(90, archs)->reason == "cubin for sm_90a");

  // Without cubins the same architectures load as PTX.
  auto ptxOnly = chooseGpuArch(90, {{"sm_80", false}, {"sm_90a", false}});
  REQUIRE(ptxOnly);
  CHECK(ptxOnly->index == 1);
  CHECK_FALSE(ptxOnly->useCubin);
  // Plain sm_90 beside sm_90a: the "a" code wins on sm_90, plain sm_90 PTX runs on newer parts.
  CHECK(chooseGpuArch(90, {{"sm_90", true}, {"sm_90a", true}})->index == 1);
  CHECK(chooseGpuArch(103, {{"sm_90", true}, {"sm_90a", true}})->index == 0);

  auto tooOld = chooseGpuArch(75, archs);
  REQUIRE_FALSE(tooOld);
  CHECK(tooOld.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(tooOld.error().message(), Catch::Contains("sm_80, sm_90a") &&
                                           Catch::Contains("(sm_75)"));
  CHECK_FALSE(chooseGpuArch(100, {{"sm_90a", true}}));
  CHECK_FALSE(parseArchName("compute_80"));
  CHECK(parseArchName("sm_90a")->archSpecific);
}

TEST_CASE("a CPU bundle's triple and features are checked against the machine", "[bundle]") {
  std::set<std::string> host = {"sse", "sse2", "avx", "avx2"};
  CHECK(missingCpuFeatures("+sse2,+avx2,-avx512f,+made-up-feature", host).empty());
  CHECK(missingCpuFeatures("+avx2,+fma,+avx512f,-avx512bw", host) ==
        std::vector<std::string>{"fma", "avx512f"});
  std::string triple = std::string(hostArchitecture()) + "-pc-linux-gnu";
  CHECK(checkHostCpu(triple, "generic", "+sse2", host));
  auto missing = checkHostCpu(triple, "znver4", "+avx2,+fma,+avx512f", host);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(missing.error().message(), Catch::Contains("znver4") &&
                                            Catch::Contains("lacks: fma, avx512f"));
  auto foreign = checkHostCpu("riscv64-unknown-linux-gnu", "generic-rv64", "", host);
  REQUIRE_FALSE(foreign);
  CHECK_THAT(foreign.error().message(), Catch::Contains("riscv64-unknown-linux-gnu"));
#if defined(__x86_64__)
  // Every x86-64 CPU has SSE2, and the detection finds it.
  CHECK(hostCpuFeatures().contains("sse2"));
#endif
}

TEST_CASE("a symbolic plan keeps its size symbols and sizes through a bundle", "[bundle]") {
  LaunchPlan plan = symbolicPlan(8);
  REQUIRE(validatePlan(plan));
  auto decoded = decodePlan(encodePlan(plan), "plan", /*requireDims=*/false);
  REQUIRE(decoded);
  const LaunchPlan &back = decoded->plan;
  CHECK(back.symbols == plan.symbols);
  CHECK(back.sizesBuffer == 1);
  CHECK(back.buffers[1].storage == Storage::Sizes);
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    CHECK(back.buffers[i].sizes == plan.buffers[i].sizes);

  // The decoded plan binds and sizes a run as the compiler's does.
  RunSizeBinder bind(back);
  std::vector<std::vector<int64_t>> three{{3, 5}};
  auto values = bind(three);
  REQUIRE(values);
  CHECK(*values == std::vector<int64_t>{3});
  CHECK(shapeAtSizes(back, back.buffers[3], *values) == std::vector<int64_t>{7});
  CHECK(shapeAtSizes(back, back.buffers[2], *values) == std::vector<int64_t>{3, 5});
  std::vector<std::vector<int64_t>> nine{{9, 5}};
  auto outside = bind(nine);
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message(),
             Catch::Contains("input 'x' dim 0 is the size symbol N in [1, 8], but the actual "
                             "size 9 is outside its range"));
  std::vector<std::vector<int64_t>> wide{{3, 4}};
  auto mismatched = bind(wide);
  REQUIRE_FALSE(mismatched);
  CHECK_THAT(mismatched.error().message(), Catch::Contains("input 'x' dim 1 is 5, got 4"));
}

TEST_CASE("a symbolic plan whose sizes could overrun its buffers is rejected", "[bundle]") {
  auto rejects = [](const LaunchPlan &plan, const std::string &expected) {
    auto valid = validatePlan(plan);
    REQUIRE_FALSE(valid);
    CHECK_THAT(valid.error().message(), Catch::Contains(expected));
  };
  {
    LaunchPlan plan = symbolicPlan(8); // a size larger than the planned bytes
    plan.buffers[3].sizes = {*ir::multiply(ir::SizeExpr::symbol(plan.symbols[0]), 3)};
    rejects(plan, "buffer 3 ('t') dim 0: N*3 ranges over [3, 24], the shape holds 20");
  }
  {
    LaunchPlan plan = symbolicPlan(8); // a symbol of another range than the plan declares
    plan.buffers[0].sizes[0] = ir::SizeExpr::symbol({"N", 1, 64});
    rejects(plan, "N in [1, 64] is not a declared size symbol");
  }
  {
    LaunchPlan plan = symbolicPlan(8);
    plan.symbols.push_back(plan.symbols[0]);
    rejects(plan, "size symbol 'N' is declared twice");
  }
  {
    LaunchPlan plan = symbolicPlan(8);
    plan.symbols[0].min = 9;
    rejects(plan, "size symbol 0 ('N') has the range [9, 8]");
  }
  {
    LaunchPlan plan = symbolicPlan(8);
    plan.sizesBuffer = 0;
    rejects(plan, "the sizes buffer 0 is not a buffer of sizes");
  }
  {
    LaunchPlan plan = symbolicPlan(8); // a second buffer of sizes the run would not fill
    plan.buffers[3].storage = Storage::Sizes;
    rejects(plan, "buffer 3 ('t') holds runtime sizes but is not the plan's i64[1] sizes buffer");
  }
}

TEST_CASE("a malformed size program is a format error naming the problem", "[bundle]") {
  std::vector<ir::SizeSymbol> symbols{{"N", 1, 8}};
  auto decode = [&](std::vector<std::pair<uint8_t, int64_t>> tokens) {
    ByteWriter out;
    out.u32(static_cast<uint32_t>(tokens.size()));
    for (auto [op, value] : tokens) {
      out.u8(op);
      out.i64(value);
    }
    std::string bytes = out.take();
    ByteReader in(bytes, "plan");
    ir::SizeExpr size = readSizeExpr(in, symbols);
    return in.ok() ? size.str() : in.error().message();
  };
  // Constant, Symbol, Add, Multiply, FloorDiv: (N*3)/2 + 1, rebuilt in canonical form.
  ir::SizeExpr n = ir::SizeExpr::symbol(symbols[0]);
  CHECK(decode({{1, 0}, {0, 3}, {3, 0}, {4, 2}, {0, 1}, {2, 0}}) ==
        ir::add(*ir::floorDiv(*ir::multiply(n, 3), 2), 1)->str());
  CHECK_THAT(decode({{2, 0}}), Catch::Contains("an operation without two operands"));
  CHECK_THAT(decode({{1, 1}}), Catch::Contains("symbol 1 of 1"));
  CHECK_THAT(decode({{9, 0}}), Catch::Contains("operation code 9 is unknown"));
  CHECK_THAT(decode({{1, 0}, {4, 0}}), Catch::Contains("a division by 0"));
  CHECK_THAT(decode({{0, 1}, {0, 2}}), Catch::Contains("2 values left, not 1"));
  CHECK_THAT(decode({{0, int64_t{1} << 62}, {0, 8}, {3, 0}}), Catch::Contains("malformed size"));
  CHECK_THAT(decode({}), Catch::Contains("0 values left"));
  // (N+1)^k expands to k+1 terms: a program of a few hundred operations may not ask for more
  // text than a size can have.
  std::vector<std::pair<uint8_t, int64_t>> power{{1, 0}, {0, 1}, {2, 0}};
  for (int i = 0; i < 200; ++i)
    power.insert(power.end(), {{1, 0}, {0, 1}, {2, 0}, {3, 0}});
  CHECK_THAT(decode(power), Catch::Contains("a size longer than 1024 characters"));
}

TEST_CASE("a CPU bundle's size buckets must each run part of the model's range", "[bundle]") {
  BundleContents contents;
  contents.meta.kilnVersion = "test";
  contents.meta.model = "symbolic";
  contents.meta.target = BundleTarget::Cpu;
  contents.hostPlan = symbolicPlan(8);
  contents.hostSharedObject = "not loaded by checkBundle";
  contents.hostBuckets = {{{1}, symbolicPlan(1)}, {{4}, symbolicPlan(4)}};
  REQUIRE(checkSizeBucket(contents.hostPlan, std::vector<int64_t>{4}, symbolicPlan(4)));
  auto check = [&](const BundleContents &bundle) { return checkBundle(encodeBundle(bundle)); };
  auto inspected = inspectBundle(encodeBundle(contents));
  REQUIRE(inspected);
  CHECK(std::ranges::count(inspected->sections, std::string(kSizeBucketsSection),
                           &std::pair<std::string, size_t>::first) == 1);
  REQUIRE(check(contents));

  auto rejects = [&](BundleContents bundle, const std::string &expected) {
    auto checked = check(bundle);
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code() == ErrorCode::FormatError);
    CHECK_THAT(checked.error().message(),
               Catch::Contains("section 'size-buckets'") && Catch::Contains(expected));
  };
  {
    BundleContents bundle = contents; // a bucket that would run sizes beyond its plan
    bundle.hostBuckets[1].upperBounds = {6};
    rejects(bundle, "bucket 1: size bucket [6]: the bucket's size symbol N in [1, 4] is not "
                    "N in [1, 6]");
  }
  {
    BundleContents bundle = contents;
    bundle.hostBuckets[1].upperBounds = {9};
    rejects(bundle, "the bound 9 is outside N in [1, 8]");
  }
  {
    BundleContents bundle = contents; // a static bucket for more than one size
    bundle.hostBuckets[0].upperBounds = {2};
    rejects(bundle, "bucket 0: size bucket [2]: the bucket's model has other size symbols");
  }
  {
    BundleContents bundle = contents;
    std::swap(bundle.hostBuckets[0], bundle.hostBuckets[1]);
    bundle.hostBuckets[1].upperBounds = {1};
    rejects(bundle, "not in ascending order");
  }
  {
    BundleContents bundle = contents; // an input of another type than the model's
    bundle.hostBuckets[0].plan.buffers[0].shape = {2, 5};
    bundle.hostBuckets[0].plan.buffers[0].bytes = 40;
    rejects(bundle, "'x' is f32[2,5] in the bucket, not f32[1,5]");
  }
  {
    BundleContents bundle = contents;
    bundle.hostBuckets[1].plan.outputs[0].name = "z";
    rejects(bundle, "the bucket's model has other outputs");
  }
}
