// Tensor-core statements (Mma, LdMatrix, AsyncCopy/Commit/Wait) through both
// GPU backends: each one-warp kernel of TensorCoreKernels.h compiles with LLVM
// NVPTX and as CUDA C with NVRTC, its PTX holds the instruction, and ptxas
// assembles it; e4m3 needs sm_89; the host backend rejects them by name.
#include "NvrtcOnThread.h"
#include "tests/codegen/gpu/GpuCodegenTestUtil.h"
#include "tests/codegen/gpu/TensorCoreKernels.h"
#include "tests/codegen/gpu/TmaKernels.h"

#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"
#include "codegen/llvm/HostBackend.h"
#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/WgmmaLayout.h"

#include <optional>
#include <regex>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::compileAndAssemble;
using kiln::testing::gpuTarget;
using kiln::testing::ptxHas;
using kiln::testing::asyncCopyKernel;
using kiln::test::compileWithNvrtcOnThread;
using kiln::testing::ldMatrixKernel;
using kiln::testing::mmaKernel;

namespace {

/// One kernel's PTX from each GPU backend (nvrtc empty where NVRTC is absent).
struct BackendPtx {
  std::string llvm;
  std::string cudaSource;
  std::optional<std::string> nvrtc;
};

/// Compiles `kernel` for `arch` through both backends, assembling each PTX
/// with ptxas when it is present; any error fails the test.
BackendPtx compileBoth(const Kernel &kernel, std::string_view arch) {
  INFO(kernel.name << " for " << arch);
  BackendPtx out;
  out.llvm = compileAndAssemble({kernel}, arch);
  codegen::GpuTarget target = gpuTarget(arch);
  auto source = codegen::cuda::emitCudaSource(std::span(&kernel, 1), target);
  if (!source)
    FAIL("CUDA C emission failed: " << source.error().str());
  out.cudaSource = *source;
  auto nvrtc = compileWithNvrtcOnThread(*source, kernel.name + ".cu", target);
  if (!nvrtc && nvrtc.error().code() == ErrorCode::Unavailable) {
    WARN("NVRTC unavailable, the CUDA C of " << kernel.name << " is not compiled: "
                                             << nvrtc.error().message());
    return out;
  }
  if (!nvrtc)
    FAIL("NVRTC rejected the CUDA C: " << nvrtc.error().str() << "\n" << *source);
  CHECK_FALSE(nvrtc->cubin.empty());
  if (kiln::testing::ptxasAvailable()) {
    auto assembled = codegen::runPtxas(nvrtc->ptx, target);
    if (!assembled)
      FAIL("ptxas rejected NVRTC's PTX: " << assembled.error().str() << "\n" << nvrtc->ptx);
  }
  out.nvrtc = nvrtc->ptx;
  return out;
}

/// Checks that both backends' PTX holds `text` (NVRTC's only where it ran).
void checkBothHave(const BackendPtx &ptx, const std::string &text) {
  INFO("llvm");
  CHECK(ptxHas(ptx.llvm, text));
  if (ptx.nvrtc) {
    INFO("nvrtc");
    CHECK(ptxHas(*ptx.nvrtc, text));
  }
}

bool contains(const std::string &text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

} // namespace

TEST_CASE("mma of f16, bf16 and tf32 compiles through both backends", "[gpu-codegen][tensor-core]") {
  for (MmaKind kind : {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16, MmaKind::TF32_M16N8K8}) {
    const MmaShapeInfo &info = mmaShapeInfo(kind);
    for (std::string_view arch : {"sm_80", "sm_90a"}) {
      INFO(mmaKindName(kind) << " " << arch);
      BackendPtx ptx = compileBoth(mmaKernel(kind), arch);
      checkBothHave(ptx, fmt::format("mma.sync.aligned.{}", info.ptxName));
      if (kind == MmaKind::TF32_M16N8K8) {
        // Operands are rounded to tf32 before the product, 4 of A and 2 of B per lane.
        checkBothHave(ptx, "cvt.rna.tf32.f32");
        CHECK(contains(ptx.cudaSource, "kiln_f32_to_tf32(ab[0])"));
      } else {
        // Pairs of 16-bit elements packed into 32-bit words, element 2i low.
        CHECK(contains(ptx.cudaSource, "(unsigned)ab[0] | (unsigned)ab[1] << 16"));
      }
      // The accumulator is read and written in place.
      CHECK(contains(ptx.cudaSource, ": \"=f\"(acc[0]), \"=f\"(acc[1]), \"=f\"(acc[2]), \"=f\"(acc[3])"));
      CHECK(contains(ptx.cudaSource, "\"f\"(acc[0]), \"f\"(acc[1]), \"f\"(acc[2]), \"f\"(acc[3]));"));
      // The register fragments never touch local memory.
      CHECK_FALSE(contains(ptx.llvm, ".local"));
      if (ptx.nvrtc)
        CHECK_FALSE(contains(*ptx.nvrtc, ".local"));
    }
  }
}

TEST_CASE("e4m3 mma needs sm_89 and PTX 8.4", "[gpu-codegen][tensor-core]") {
  Kernel kernel = mmaKernel(MmaKind::E4M3_M16N8K32);
  for (std::string_view arch : {"sm_89", "sm_90a"}) {
    INFO(arch);
    BackendPtx ptx = compileBoth(kernel, arch);
    checkBothHave(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
    CHECK(ptxHas(ptx.llvm, ".version 8.4"));
    // Four 8-bit elements to a word, element 4i lowest.
    CHECK(contains(ptx.cudaSource, "(unsigned)ab[0] | (unsigned)ab[1] << 8 | (unsigned)ab[2] << 16 | "
                                   "(unsigned)ab[3] << 24"));
  }
  // The other kinds keep the target's own PTX version.
  CHECK(ptxHas(compileAndAssemble({mmaKernel(MmaKind::BF16_M16N8K16)}, "sm_89"), ".version 7.8"));

  for (std::string_view arch : {"sm_80", "sm_86"}) {
    INFO(arch);
    codegen::GpuTarget target = gpuTarget(arch);
    auto llvm = codegen::compilePtxWithLlvm(std::span(&kernel, 1), target);
    REQUIRE_FALSE(llvm);
    auto cuda = codegen::cuda::emitCudaSource(std::span(&kernel, 1), target);
    REQUIRE_FALSE(cuda);
    for (const Error &error : {llvm.error(), cuda.error()}) {
      INFO(error.str());
      CHECK(error.code() == ErrorCode::Unsupported);
      CHECK(contains(error.message(), "mma_e4m3_m16n8k32")); // the kernel
      CHECK(contains(error.message(), "mma.e4m3.m16n8k32 (PTX mma.sync.aligned.m16n8k32.row.col."
                                      "f32.e4m3.e4m3.f32) needs sm_89 or newer; the target is " +
                                          std::string(arch)));
    }
  }
}

TEST_CASE("ldmatrix of 1, 2 and 4 matrices, plain and transposed", "[gpu-codegen][tensor-core]") {
  for (int matrices : {1, 2, 4}) {
    for (bool transpose : {false, true}) {
      std::string instruction = fmt::format("ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16", matrices,
                                            transpose ? ".trans" : "");
      for (std::string_view arch : {"sm_80", "sm_90a"}) {
        INFO(instruction << " " << arch);
        BackendPtx ptx = compileBoth(ldMatrixKernel(matrices, transpose), arch);
        checkBothHave(ptx, instruction);
        CHECK(contains(ptx.cudaSource, "__cvta_generic_to_shared(&tile["));
        CHECK_FALSE(contains(ptx.llvm, ".local"));
        if (ptx.nvrtc)
          CHECK_FALSE(contains(*ptx.nvrtc, ".local"));
      }
    }
  }
  // bf16 tiles take the same instruction, and so do e4m3 ones (bytes in pairs, never .trans).
  checkBothHave(compileBoth(ldMatrixKernel(4, true, DType::BF16), "sm_80"),
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
  for (int matrices : {1, 2, 4})
    checkBothHave(compileBoth(ldMatrixKernel(matrices, false, DType::F8E4M3), "sm_90a"),
                  fmt::format("ldmatrix.sync.aligned.m8n8.x{}.shared.b16", matrices));
}

TEST_CASE("cp.async of 4, 8 and 16 bytes, with and without a predicate", "[gpu-codegen][tensor-core]") {
  for (int lanes : {1, 2, 4}) {
    int bytes = 4 * lanes;
    for (bool predicated : {false, true}) {
      // cg (bypassing L1) exists only for 16 bytes; a predicate becomes the
      // source size, 0 zero-filling the destination.
      std::string instruction =
          fmt::format("cp.async.{}.shared.global", bytes == 16 ? "cg" : "ca");
      std::regex form(fmt::format(R"(cp\.async\.{}\.shared\.global \[%rd?\d+\], \[%rd\d+\], {}{};)",
                                  bytes == 16 ? "cg" : "ca", bytes, predicated ? R"(, %r\d+)" : ""));
      for (std::string_view arch : {"sm_80", "sm_90a"}) {
        INFO(bytes << " bytes" << (predicated ? ", predicated, " : ", ") << arch);
        BackendPtx ptx = compileBoth(asyncCopyKernel(lanes, predicated), arch);
        checkBothHave(ptx, instruction);
        CHECK(std::regex_search(ptx.llvm, form));
        checkBothHave(ptx, "cp.async.commit_group");
        checkBothHave(ptx, "cp.async.wait_group 1");
        checkBothHave(ptx, "cp.async.wait_group 0");
        if (predicated)
          CHECK(contains(ptx.cudaSource, fmt::format("], {}, %2;\"", bytes)));
        else
          CHECK(contains(ptx.cudaSource, fmt::format("], {};\"", bytes)));
      }
    }
  }
}

// GPU statements stand only inside thread loops (the verifier), which the host refuses, so a
// host kernel holding one is the verifier's error.
TEST_CASE("the host backend rejects tensor-core statements through the verifier", "[codegen][host][errors][tensor-core]") {
  BufferPtr shared = makeBuffer("tile", DType::F16, 64, MemScope::Shared);
  BufferPtr global = makeBuffer("x", DType::F16, 64);
  BufferPtr f16 = makeBuffer("frag", DType::F16, 12, MemScope::Register);
  BufferPtr acc = makeBuffer("acc", DType::F32, 4, MemScope::Register);
  struct Case {
    StmtPtr stmt;
    std::string expected;
  } cases[] = {
      {allocate(f16, allocate(acc, mma(MmaKind::F16_M16N8K16, {acc, 0}, {f16, 0}, {f16, 8}, {acc, 0}))),
       "an mma outside the thread loops"},
      {allocate(f16, ldMatrix({f16, 0}, 4, false, shared, index(0))), "an ldmatrix outside the thread loops"},
      {asyncCopy(shared, index(0), global, index(0), 8), "an async copy outside the thread loops"},
      {asyncCommit(), "an async commit outside the thread loops"},
      {asyncWait(0), "an async wait outside the thread loops"},
  };
  for (const Case &c : cases) {
    Kernel kernel{"host_tensor_core", {global}, c.stmt};
    auto ir = codegen::emitHostLlvmIr(kernel, codegen::referenceCpuTarget(), false);
    REQUIRE_FALSE(ir);
    INFO(ir.error().str());
    CHECK(ir.error().code() == ErrorCode::VerifyError);
    CHECK(contains(ir.error().message(), c.expected));
    CHECK(ir.error().message().starts_with("kernel host_tensor_core: "));
  }
}

TEST_CASE("shared buffers past 48 KiB come from dynamic shared memory", "[gpu-codegen]") {
  // Two tiles of 40 KiB (80 KiB in all): each a slice of one extern array at a 16-byte
  // aligned offset; a block of 8 KiB stays static.
  auto makeKernel = [](std::string name, int64_t tileElements) {
    BufferPtr x = makeBuffer("x", DType::F32, 256), out = makeBuffer("out", DType::F32, 256);
    BufferPtr first = makeBuffer("first", DType::F32, tileElements, MemScope::Shared);
    BufferPtr second = makeBuffer("second", DType::F16, 2 * tileElements + 1, MemScope::Shared);
    VarPtr t = makeVar("t");
    ExprPtr i = kir::ref(t);
    ExprPtr last = index(tileElements - 256);
    StmtPtr body = seq({store(first, add(last, i), load(x, i)),
                        store(second, add(index(2 * tileElements - 255), i),
                              cast(load(x, i), Type::scalar(DType::F16))),
                        barrier(),
                        store(out, i,
                              add(load(first, add(last, sub(index(255), i))),
                                  cast(load(second, add(index(2 * tileElements - 255), i)),
                                       Type::scalar(DType::F32))))});
    return Kernel{std::move(name), {x, out},
                  allocate(first, allocate(second, forRange(t, 256, ForKind::ThreadX, body)))};
  };
  Kernel big = makeKernel("dynamic_tiles", 10 * 1024);
  auto launch = gpuLaunchOf(big);
  REQUIRE(launch);
  CHECK(launch->dynamicShared());
  REQUIRE(launch->sharedOffsets.size() == 2);
  CHECK(launch->sharedOffsets[0].second == 0);
  // 40 KiB, then 40 KiB + 2 bytes rounded up to 16.
  CHECK(launch->sharedOffset(launch->sharedOffsets[1].first) == 40 * 1024);
  CHECK(launch->dynamicSharedBytes() == 40 * 1024 + 40 * 1024 + 16);
  for (std::string_view arch : {"sm_80", "sm_90a"}) {
    INFO(arch);
    BackendPtx ptx = compileBoth(big, arch);
    checkBothHave(ptx, ".extern .shared .align 16 .b8 kiln_dynamic_smem[]");
    CHECK(contains(ptx.cudaSource, "kiln_smem_base = kiln_dynamic_smem;"));
    CHECK(contains(ptx.cudaSource, "reinterpret_cast<unsigned short *>(kiln_smem_base + 40960)"));
  }
  Kernel small = makeKernel("static_tiles", 1024);
  auto smallLaunch = gpuLaunchOf(small);
  REQUIRE(smallLaunch);
  CHECK_FALSE(smallLaunch->dynamicShared());
  CHECK(smallLaunch->dynamicSharedBytes() == 0);
  BackendPtx ptx = compileBoth(small, "sm_80");
  CHECK_FALSE(contains(ptx.llvm, "kiln_dynamic_smem"));
  CHECK_FALSE(contains(ptx.cudaSource, "kiln_dynamic_smem"));
  // Past what a block may have at all (sm_86: 99 KiB), both backends refuse, naming the size.
  Kernel huge = makeKernel("huge_tiles", 13 * 1024); // 104 KiB
  codegen::GpuTarget sm86 = gpuTarget("sm_86");
  auto llvm = codegen::compilePtxWithLlvm(std::vector<Kernel>{huge}, sm86);
  REQUIRE_FALSE(llvm);
  CHECK_THAT(llvm.error().message(), Catch::Contains("allows a block 101376"));
  auto cuda = codegen::cuda::emitCudaSource(std::span(&huge, 1), sm86);
  REQUIRE_FALSE(cuda);
  CHECK_THAT(cuda.error().message(), Catch::Contains("allows a block 101376"));
}

namespace {

/// One warpgroup: zeroed 64 x 64 bf16 tiles of A (K-major) and B (`bMnMajor`), one product of
/// `n` columns, its accumulators to `out`.
Kernel wgmmaKernel(bool bMnMajor, int n) {
  auto out = makeBuffer("out", DType::F32, 128 * n / 2);
  auto aTile = makeBuffer("a_tile", DType::BF16, 64 * 64, MemScope::Shared);
  auto bTile = makeBuffer("b_tile", DType::BF16, 64 * 256, MemScope::Shared);
  auto acc = makeBuffer("acc", DType::F32, n / 2, MemScope::Register);
  auto t = makeVar("t"), i = makeVar("i"), e = makeVar("e");
  ExprPtr zero = cast(floatImm(0.0, Type::scalar(DType::F32)), Type::scalar(DType::BF16));
  StmtPtr body = seq(
      {forRange(i, 64, ForKind::Serial,
                seq({store(aTile, add(mul(kir::ref(i), index(128)), kir::ref(t)), zero),
                     store(bTile, add(mul(kir::ref(i), index(128)), kir::ref(t)), zero)})),
       wgmmaSync(WgmmaSyncOp::SharedFence), barrier(), wgmmaSync(WgmmaSyncOp::Fence),
       wgmma(WgmmaKind::BF16_K16, n, {acc, 0}, {aTile, index(16), false, 16, 1024},
             {bTile, index(0), bMnMajor, bMnMajor ? 8192 : 16, 1024}, false),
       wgmmaSync(WgmmaSyncOp::Commit), wgmmaSync(WgmmaSyncOp::Wait, 0),
       forRange(e, n / 2, ForKind::Serial,
                store(out, add(mul(kir::ref(t), index(n / 2)), kir::ref(e)),
                      load(acc, kir::ref(e))))});
  return Kernel{fmt::format("wgmma_n{}_{}", n, bMnMajor ? "mn" : "k"), {out},
                allocate(aTile, allocate(bTile, forRange(t, 128, ForKind::ThreadX,
                                                         allocate(acc, body))))};
}

} // namespace

TEST_CASE("wgmma compiles for sm_90a through both backends", "[gpu-codegen][tensor-core][wgmma]") {
  for (bool bMnMajor : {false, true})
    for (int n : {64, 256}) {
      Kernel kernel = wgmmaKernel(bMnMajor, n);
      auto launch = gpuLaunchOf(kernel);
      REQUIRE(launch);
      // Operand tiles at 1024-byte boundaries of a dynamic layout whose base the kernel aligns.
      CHECK(launch->sharedAlignment == 1024);
      CHECK(launch->dynamicShared());
      CHECK(launch->sharedOffset(launch->sharedOffsets[1].first) == 8192);
      CHECK(launch->dynamicSharedBytes() == 8192 + 32768 + 1024);
      BackendPtx ptx = compileBoth(kernel, "sm_90a");
      checkBothHave(ptx, fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", n));
      checkBothHave(ptx, "wgmma.fence.sync.aligned");
      checkBothHave(ptx, "fence.proxy.async.shared::cta");
      checkBothHave(ptx, "wgmma.commit_group.sync.aligned");
      checkBothHave(ptx, "wgmma.wait_group.sync.aligned 0");
      CHECK(contains(ptx.cudaSource, "& 1023u)"));
    }
  // Only sm_90a has wgmma: both backends refuse others by name.
  Kernel kernel = wgmmaKernel(false, 64);
  for (std::string_view arch : {"sm_80", "sm_90"}) {
    codegen::GpuTarget target = gpuTarget(arch);
    auto llvm = codegen::compilePtxWithLlvm(std::vector<Kernel>{kernel}, target);
    REQUIRE_FALSE(llvm);
    CHECK_THAT(llvm.error().message(), Catch::Contains("needs sm_90a"));
    auto cuda = codegen::cuda::emitCudaSource(std::span(&kernel, 1), target);
    REQUIRE_FALSE(cuda);
    CHECK_THAT(cuda.error().message(), Catch::Contains("needs sm_90a"));
  }
}

TEST_CASE("bulk tensor copies and mbarriers compile for sm_90 through both backends",
          "[gpu-codegen][tensor-core][tma]") {
  Kernel kernel = kiln::testing::tmaPipelineKernel({});
  auto launch = gpuLaunchOf(kernel);
  REQUIRE(launch);
  CHECK(launch->sharedAlignment == 1024); // the copies' destinations sit at swizzle atoms
  BackendPtx ptx = compileBoth(kernel, "sm_90a");
  checkBothHave(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx"
                     "::bytes");
  checkBothHave(ptx, "mbarrier.init.shared::cta.b64");
  checkBothHave(ptx, "fence.mbarrier_init.release.cluster");
  checkBothHave(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64");
  checkBothHave(ptx, "mbarrier.arrive.shared::cta.b64");
  checkBothHave(ptx, "mbarrier.try_wait.parity.shared::cta.b64");
  // The tensor maps follow the buffers as 128-byte, 64-aligned parameters read in place
  // (grid constants): the copies take their generic parameter address, never a local copy.
  checkBothHave(ptx, ".param .align 128 .b8");
  checkBothHave(ptx, "cvta.param");
  CHECK_FALSE(ptxHas(ptx.llvm, "__local_depot"));
  CHECK(contains(ptx.cudaSource, "const __grid_constant__ kiln_tensor_map"));
  // Bulk tensor copies exist from sm_90: both backends refuse older targets by name.
  codegen::GpuTarget ampere = gpuTarget("sm_80");
  Kernel copies = kiln::testing::tmaPipelineKernel({});
  auto llvm = codegen::compilePtxWithLlvm(std::vector<Kernel>{copies}, ampere);
  REQUIRE_FALSE(llvm);
  CHECK_THAT(llvm.error().message(), Catch::Contains("sm_90"));
  auto cuda = codegen::cuda::emitCudaSource(std::span(&copies, 1), ampere);
  REQUIRE_FALSE(cuda);
  CHECK_THAT(cuda.error().message(), Catch::Contains("sm_90"));
}
