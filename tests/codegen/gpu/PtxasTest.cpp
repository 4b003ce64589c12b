// The ptxas driver and the NVPTX backend's error paths: parsing `ptxas -v`,
// a missing ptxas, PTX that ptxas rejects, and kernels that are not GPU kernels.
#include "ScopedEnv.h"
#include "tests/codegen/gpu/GpuCodegenTestUtil.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::gpuTarget;

using kiln::test::ScopedEnv;

namespace {

/// A temporary directory of this test alone, made TMPDIR for its scope: ctest runs other test
/// processes at the same time, whose ptxas runs make directories in the shared one.
class PrivateTempDir {
public:
  PrivateTempDir() : path_(makeDirectory()), env_("TMPDIR", path_.c_str()) {}
  ~PrivateTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

private:
  static std::string makeDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-ptxas-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    return pattern;
  }
  std::string path_;
  ScopedEnv env_;
};

/// Files of ptxas's temporary directories (kiln-ptxas-*) now in the temp dir.
size_t ptxasTemporaries() {
  size_t count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    count += entry.path().filename().string().starts_with("kiln-ptxas-");
  return count;
}

} // namespace

TEST_CASE("ptxas: parsePtxasVerbose reads registers, smem, stack and spills", "[gpu-codegen]") {
  // Verbatim shape of CUDA 13 ptxas -v output (two kernels and a device function).
  const char *log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'first' for 'sm_80'\n"
                    "ptxas info    : Function properties for first\n"
                    "    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 40 registers, used 1 barriers, 512 bytes smem, 368 bytes "
                    "cmem[0]\n"
                    "ptxas info    : Function properties for helper\n"
                    "    64 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                    "ptxas info    : Compiling entry function 'second' for 'sm_80'\n"
                    "ptxas info    : Function properties for second\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 9 registers, used 0 barriers, 360 bytes cmem[0]\n"
                    "ptxas info    : Compile time = 1.000 ms\n";
  auto kernels = codegen::parsePtxasVerbose(log);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].name == "first");
  CHECK(kernels[0].registers == 40);
  CHECK(kernels[0].sharedBytes == 512);
  CHECK(kernels[0].stackBytes == 24);
  CHECK(kernels[0].spillStoreBytes == 8);
  CHECK(kernels[0].spillLoadBytes == 12);
  CHECK(kernels[1].name == "second");
  CHECK(kernels[1].registers == 9);
  CHECK(kernels[1].sharedBytes == 0);
  CHECK(kernels[1].stackBytes == 0);
  CHECK(codegen::parsePtxasVerbose("").empty());
}

TEST_CASE("ptxas: real output of a shared-memory kernel", "[gpu-codegen]") {
  if (!testing::ptxasAvailable()) {
    WARN("ptxas not found at " << codegen::ptxasPath() << ": real ptxas output not parsed");
    return;
  }
  BufferPtr x = makeBuffer("x", DType::F32, 256), out = makeBuffer("out", DType::F32, 256);
  BufferPtr tile = makeBuffer("tile", DType::F32, 256, MemScope::Shared);
  VarPtr t = makeVar("t");
  Kernel reverse{"reverse_tile", {x, out},
                 allocate(tile, forRange(t, 256, ForKind::ThreadX,
                                         seq({store(tile, kir::ref(t), load(x, kir::ref(t))), barrier(),
                                              store(out, kir::ref(t),
                                                    load(tile, sub(index(255), kir::ref(t))))})))};
  VarPtr u = makeVar("u");
  Kernel copy{"plain_copy", {x, out},
              forRange(u, 64, ForKind::ThreadX, store(out, kir::ref(u), load(x, kir::ref(u))))};
  for (std::string_view arch : codegen::kCheckedGpuArchs) {
    auto ptx = codegen::compilePtxWithLlvm(std::vector<Kernel>{reverse, copy}, gpuTarget(arch));
    REQUIRE(ptx);
    PrivateTempDir tmp;
    size_t before = ptxasTemporaries();
    auto result = codegen::runPtxas(*ptx, gpuTarget(arch));
    REQUIRE(result);
    CHECK(ptxasTemporaries() == before);
    INFO(result->log);
    CHECK(result->log.find("Compiling entry function 'reverse_tile'") != std::string::npos);
    REQUIRE(result->kernels.size() == 2);
    auto named = [&](std::string_view name) {
      for (const codegen::KernelResources &kernel : result->kernels)
        if (kernel.name == name)
          return kernel;
      FAIL("ptxas reported no kernel " << name);
      return codegen::KernelResources{};
    };
    CHECK(named("reverse_tile").sharedBytes == 1024);
    CHECK(named("reverse_tile").registers > 0);
    CHECK(named("plain_copy").sharedBytes == 0);
    CHECK(named("plain_copy").registers > 0);
    // An ELF cubin.
    REQUIRE(result->cubin.size() > 4);
    CHECK(static_cast<char>(result->cubin[1]) == 'E');
    CHECK(static_cast<char>(result->cubin[2]) == 'L');
    CHECK(static_cast<char>(result->cubin[3]) == 'F');
  }
}

TEST_CASE("ptxas: a missing ptxas is Unavailable and names the path", "[gpu-codegen]") {
  const char *missing = "/nonexistent/kiln-test/ptxas";
  ScopedEnv env("KILN_PTXAS", missing);
  CHECK(codegen::ptxasPath() == missing);
  auto result = codegen::runPtxas(".version 7.8\n.target sm_80\n.address_size 64\n",
                                  gpuTarget("sm_80"));
  REQUIRE(!result);
  CHECK(result.error().code() == ErrorCode::Unavailable);
  CHECK(result.error().message().find(missing) != std::string::npos);
}

TEST_CASE("ptxas: rejected PTX is a CompileError carrying the log", "[gpu-codegen]") {
  if (!testing::ptxasAvailable()) {
    WARN("ptxas not found at " << codegen::ptxasPath() << ": rejection not checked");
    return;
  }
  PrivateTempDir tmp;
  size_t before = ptxasTemporaries();
  const char *broken = ".version 7.8\n.target sm_80\n.address_size 64\n"
                       ".visible .entry broken()\n{\n  frobnicate.b32 %r1;\n  ret;\n}\n";
  auto result = codegen::runPtxas(broken, gpuTarget("sm_80"));
  REQUIRE(!result);
  CHECK(result.error().code() == ErrorCode::CompileError);
  REQUIRE(!result.error().notes().empty());
  INFO(result.error().notes().front());
  CHECK(result.error().notes().front().find("error") != std::string::npos);
  CHECK(ptxasTemporaries() == before);
}

TEST_CASE("nvptx: a kernel gpuLaunchOf rejects is a VerifyError naming it", "[gpu-codegen]") {
  BufferPtr x = makeBuffer("x", DType::F32, 64), n = makeBuffer("n", DType::I64, 1);
  VarPtr t = makeVar("t");
  // The thread loop's extent is read from memory: not a launch shape.
  Kernel kernel{"dynamic_block", {x, n},
                forLoop(t, index(0), load(n, index(0)), ForKind::ThreadX,
                        store(x, kir::ref(t), floatImm(1.0, Type::scalar(DType::F32))))};
  auto ptx = codegen::compilePtxWithLlvm(std::span(&kernel, 1), gpuTarget("sm_80"));
  REQUIRE(!ptx);
  CHECK(ptx.error().code() == ErrorCode::VerifyError);
  CHECK(ptx.error().message().find("dynamic_block") != std::string::npos);

  // A host kernel (no block or thread loop) is not a GPU kernel either.
  Kernel host{"host_loop", {x},
              forRange(t, 64, ForKind::Serial,
                       store(x, kir::ref(t), floatImm(1.0, Type::scalar(DType::F32))))};
  auto hostPtx = codegen::compilePtxWithLlvm(std::span(&host, 1), gpuTarget("sm_80"));
  REQUIRE(!hostPtx);
  CHECK(hostPtx.error().code() == ErrorCode::VerifyError);
  CHECK(hostPtx.error().message().find("host_loop") != std::string::npos);
}

TEST_CASE("nvptx: missing libdevice is Unavailable", "[gpu-codegen]") {
  ScopedEnv env("KILN_LIBDEVICE", "/nonexistent/kiln-test/libdevice.10.bc");
  BufferPtr x = makeBuffer("x", DType::F32, 32);
  VarPtr t = makeVar("t");
  Kernel kernel{"needs_exp", {x},
                forRange(t, 32, ForKind::ThreadX,
                         store(x, kir::ref(t), call(Intrinsic::Exp, {load(x, kir::ref(t))})))};
  auto ptx = codegen::compilePtxWithLlvm(std::span(&kernel, 1), gpuTarget("sm_80"));
  REQUIRE(!ptx);
  CHECK(ptx.error().code() == ErrorCode::Unavailable);
  CHECK(ptx.error().message().find("/nonexistent/kiln-test/libdevice.10.bc") != std::string::npos);
}
