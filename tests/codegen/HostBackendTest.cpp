// Host backend tests of the pieces around code: the CpuTarget and its cache
// key, textual LLVM IR dumps (before and after O3), and errors that name the
// kernel for IR the host cannot run.
#include "HostTestUtil.h"

#include <fmt/format.h>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;

namespace {

/// out[i] = in[i] * 2 over n: a parallel loop over rows of 16, vectorized inside.
Kernel scaleKernel(std::string name = "scale") {
  const int64_t rows = 8, cols = 16;
  auto in = makeBuffer("in", DType::F32, rows * cols);
  auto out = makeBuffer("out", DType::F32, rows * cols);
  auto r = makeVar("r"), c = makeVar("c");
  ExprPtr i = add(mul(kir::ref(r), index(cols)), kir::ref(c));
  StmtPtr inner =
      forRange(c, cols, ForKind::Vectorized,
               store(out, i, mul(load(in, i), floatImm(2.0, Type::scalar(DType::F32)))));
  return Kernel{std::move(name), {in, out}, forRange(r, rows, ForKind::Parallel, inner)};
}

bool contains(const std::string &text, std::string_view piece) {
  return text.find(piece) != std::string::npos;
}

} // namespace

TEST_CASE("the reference target is fixed and its cache key canonical", "[codegen][host][target]") {
  codegen::CpuTarget target = codegen::referenceCpuTarget();
  CHECK(target.triple == "x86_64-pc-linux-gnu");
  CHECK(target.cpuName == "x86-64-v3");
  CHECK(target.vectorBits == 256);
  CHECK(target.f32Lanes() == 8);
  CHECK(target.hasFma);
  CHECK(target.cores == 8);
  CHECK(target.cacheKey() ==
        "cpu;triple=x86_64-pc-linux-gnu;cpu=x86-64-v3;features=+avx,+avx2,+bmi,+bmi2,+cx16,+f16c,"
        "+fma,+lzcnt,+movbe,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave;vector=256;"
        "fma=1;cores=8;l1d=32768;l2=1048576;l3=33554432");
  codegen::CpuTarget other = target;
  other.features += ",+avx512f";
  CHECK(other.cacheKey() != target.cacheKey());
  other = target;
  other.cpuName = "znver4";
  CHECK(other.cacheKey() != target.cacheKey());
}

TEST_CASE("the host target describes this machine", "[codegen][host][target]") {
  codegen::CpuTarget host = codegen::hostCpuTarget();
  CHECK(!host.triple.empty());
  CHECK(!host.cpuName.empty());
  CHECK(host.cores >= 1);
  CHECK((host.vectorBits == 128 || host.vectorBits == 256 || host.vectorBits == 512));
  CHECK(host.l1dBytes > 0);
  CHECK(host.l2Bytes > 0);
  CHECK(host.l3Bytes > 0);
  // Deterministic: the same machine gives the same key.
  CHECK(host.cacheKey() == codegen::hostCpuTarget().cacheKey());
  if (host.triple.starts_with("x86_64")) {
    CHECK(host.hasFma == contains(host.features, "+fma,"));
    CHECK(contains(host.features, "+sse2"));
    CHECK((host.vectorBits == 512) == contains(host.features, "+avx512f,"));
  }
}

TEST_CASE("LLVM IR dump before O3 shows the ABI, outlining and loop metadata",
          "[codegen][host][dump]") {
  auto ir = codegen::emitHostLlvmIr(scaleKernel(), codegen::referenceCpuTarget(), false);
  REQUIRE(ir.has_value());
  CHECK(contains(*ir, "define void @scale(ptr"));
  CHECK(contains(*ir, "define internal void @scale.parallel0(ptr"));
  CHECK(contains(*ir, "call void @kiln_cpu_parallel_for(ptr @scale.parallel0"));
  CHECK(contains(*ir, "!llvm.loop"));
  CHECK(contains(*ir, "!{!\"llvm.loop.vectorize.enable\", i1 true}"));
  CHECK(contains(*ir, "!{!\"llvm.loop.vectorize.width\", i32 8}")); // 256 bits of f32
  CHECK(contains(*ir, "\"target-cpu\"=\"x86-64-v3\""));
  CHECK(contains(*ir, "!align"));
  CHECK(contains(*ir, "target triple = \"x86_64-pc-linux-gnu\""));
  CHECK(!contains(*ir, "noalias"));

  auto unrolled = makeBuffer("out", DType::I32, 4);
  auto i = makeVar("i");
  Kernel unrollKernel{"unroll_me",
                      {unrolled},
                      forRange(i, 4, ForKind::Unrolled,
                               store(unrolled, kir::ref(i), intImm(1, Type::scalar(DType::I32))))};
  auto unrolledIr = codegen::emitHostLlvmIr(unrollKernel, codegen::referenceCpuTarget(), false);
  REQUIRE(unrolledIr.has_value());
  CHECK(contains(*unrolledIr, "!{!\"llvm.loop.unroll.full\"}"));
  auto unrolledOptimized =
      codegen::emitHostLlvmIr(unrollKernel, codegen::referenceCpuTarget(), true);
  REQUIRE(unrolledOptimized.has_value());
  CHECK(!contains(*unrolledOptimized, "br label")); // no loop left
}

TEST_CASE("LLVM IR dump after O3 is vectorized for the target", "[codegen][host][dump]") {
  auto ir = codegen::emitHostLlvmIr(scaleKernel(), codegen::referenceCpuTarget(), true);
  REQUIRE(ir.has_value());
  CHECK(contains(*ir, "define void @scale(ptr"));
  CHECK(contains(*ir, "fmul <8 x float>"));
  CHECK(!contains(*ir, "fmul fast"));
}

TEST_CASE("a vectorized loop's reads through an index table become gathers",
          "[codegen][host][dump]") {
  // out[i] = in[table[i]]: the loop vectorizer cannot bound the gathered addresses to check
  // them against the store at run time, so only the loop's parallel_accesses (a vectorized
  // loop's iterations are independent) lets it vectorize.
  const int64_t n = 64;
  auto in = makeBuffer("in", DType::F32, n);
  auto table = makeBuffer("table", DType::I64, n);
  auto out = makeBuffer("out", DType::F32, n);
  auto i = makeVar("i");
  Kernel gather{"gather",
                {in, table, out},
                forRange(i, n, ForKind::Vectorized,
                         store(out, kir::ref(i), load(in, load(table, kir::ref(i)))))};
  auto before = codegen::emitHostLlvmIr(gather, codegen::referenceCpuTarget(), false);
  REQUIRE(before.has_value());
  CHECK(contains(*before, "llvm.loop.parallel_accesses"));
  CHECK(contains(*before, "!llvm.access.group"));
  auto after = codegen::emitHostLlvmIr(gather, codegen::referenceCpuTarget(), true);
  REQUIRE(after.has_value());
  INFO(*after);
  CHECK(contains(*after, "vector.body")); // AVX2 gathers the lanes; AVX-512 with vgatherqps
  CHECK(contains(*after, "<8 x float>"));
}

TEST_CASE("GPU loop kinds are an error naming the kernel", "[codegen][host][errors]") {
  auto out = makeBuffer("out", DType::F32, 32);
  auto t = makeVar("tid");
  Kernel gpu{"gpu_kernel",
             {out},
             forRange(t, 32, ForKind::ThreadX,
                      store(out, kir::ref(t), floatImm(1.0, Type::scalar(DType::F32))))};
  auto module = codegen::compileHostModule(std::span(&gpu, 1), kiln::testing::hostTarget());
  REQUIRE(!module.has_value());
  CHECK(module.error().code() == ErrorCode::Unsupported);
  CHECK(contains(module.error().message(), "kernel 'gpu_kernel'"));
  CHECK(contains(module.error().message(), "thread.x"));
  CHECK(contains(module.error().message(), "'tid'"));
  auto ir = codegen::emitHostLlvmIr(gpu, codegen::referenceCpuTarget(), false);
  REQUIRE(!ir.has_value());
  CHECK(contains(ir.error().message(), "kernel 'gpu_kernel'"));

  // A well-formed GPU kernel (block.y around thread.x): the host refuses its outer loop.
  auto b = makeVar("bid");
  Kernel block{"block_kernel",
               {out},
               forRange(b, 2, ForKind::BlockY,
                        forRange(t, 16, ForKind::ThreadX,
                                 store(out, add(mul(kir::ref(b), index(16)), kir::ref(t)),
                                       floatImm(1.0, Type::scalar(DType::F32)))))};
  auto blockError = codegen::compileHostModule(std::span(&block, 1), kiln::testing::hostTarget());
  REQUIRE(!blockError.has_value());
  CHECK(contains(blockError.error().message(), "block.y"));
}

TEST_CASE("shared memory is an error on the host", "[codegen][host][errors]") {
  auto out = makeBuffer("out", DType::F32, 4);
  auto tile = makeBuffer("tile", DType::F32, 4, MemScope::Shared);
  Kernel k{"uses_smem", {out}, allocate(tile, store(out, index(0), load(tile, index(0))))};
  auto module = codegen::compileHostModule(std::span(&k, 1), kiln::testing::hostTarget());
  REQUIRE(!module.has_value());
  CHECK(module.error().code() == ErrorCode::Unsupported);
  CHECK(module.error().message() ==
        "host backend: kernel 'uses_smem': buffer 'tile' is in shared memory, which only GPU "
        "kernels have");
}

TEST_CASE("malformed kernels are the verifier's errors, not crashes", "[codegen][host][errors]") {
  auto out = makeBuffer("out", DType::F32, 4);
  auto stray = makeBuffer("stray", DType::F32, 4);
  auto unbound = makeVar("unbound");
  Type f32 = Type::scalar(DType::F32);

  Kernel outOfScope{"out_of_scope", {out}, store(out, kir::ref(unbound), floatImm(1.0, f32))};
  auto e1 = codegen::emitHostLlvmIr(outOfScope, kiln::testing::hostTarget(), false);
  REQUIRE(!e1.has_value());
  CHECK(e1.error().code() == ErrorCode::VerifyError);
  CHECK(e1.error().message() ==
        "kernel out_of_scope: variable unbound is used outside its scope (no enclosing for or let "
        "binds it), in `store f32 out[unbound] = 1.0f32`");

  Kernel strayBuffer{"stray_buffer", {out}, store(stray, index(0), floatImm(1.0, f32))};
  auto e2 = codegen::emitHostLlvmIr(strayBuffer, kiln::testing::hostTarget(), false);
  REQUIRE(!e2.has_value());
  CHECK(e2.error().code() == ErrorCode::VerifyError);
  CHECK(e2.error().message() ==
        "kernel stray_buffer: store into buffer stray, which is neither a parameter nor allocated "
        "around this use, in `store f32 stray[0] = 1.0f32`");

  auto half = makeBuffer("half", DType::F16, 4);
  Kernel halfMath{
      "half_math", {half}, store(half, index(0), add(load(half, index(0)), load(half, index(1))))};
  auto e3 = codegen::emitHostLlvmIr(halfMath, kiln::testing::hostTarget(), false);
  REQUIRE(!e3.has_value());
  CHECK(e3.error().code() == ErrorCode::Unsupported);
  CHECK(contains(e3.error().message(), "arithmetic on f16"));

  Kernel one{"dup", {out}, store(out, index(0), floatImm(1.0, f32))};
  std::vector<Kernel> twice{one, one};
  auto e4 = codegen::compileHostModule(twice, kiln::testing::hostTarget());
  REQUIRE(!e4.has_value());
  CHECK(e4.error().code() == ErrorCode::InvalidArgument);
  CHECK(e4.error().message() == "host backend: two kernels are named 'dup'");

  // A kernel named like a runtime function would replace it.
  Kernel clash{
      "kiln_cpu_parallel_for",
      {out},
      forRange(unbound, 2, ForKind::Parallel, store(out, kir::ref(unbound), floatImm(1.0, f32)))};
  auto e5 = codegen::compileHostModule(std::span(&clash, 1), kiln::testing::hostTarget());
  REQUIRE(!e5.has_value());
  CHECK(contains(e5.error().message(), "kiln_cpu_parallel_for"));
}

TEST_CASE("a target LLVM cannot build for is an error", "[codegen][host][errors]") {
  codegen::CpuTarget target = codegen::referenceCpuTarget();
  target.triple = "riscv64-unknown-linux-gnu";
  auto ir = codegen::emitHostLlvmIr(scaleKernel(), target, false);
  REQUIRE(!ir.has_value());
  CHECK(ir.error().code() == ErrorCode::Unsupported);
  CHECK(contains(ir.error().message(), "riscv64-unknown-linux-gnu"));
}

TEST_CASE("a compile's kernels split into objects compiled at once link as one module",
          "[codegen][host]") {
  // Five kernels in three objects (emitHostObjects): each object holds only its share, and
  // the objects linked together (loadHostObjects) give every kernel, each computing its own.
  std::vector<Kernel> kernels;
  std::vector<std::string> names;
  for (int k = 0; k < 5; ++k) {
    kernels.push_back(scaleKernel(fmt::format("scale{}", k)));
    names.push_back(kernels.back().name);
  }
  const codegen::CpuTarget &target = testing::hostTarget();
  auto objects = codegen::emitHostObjects(kernels, target, 3);
  REQUIRE(objects.has_value());
  REQUIRE(objects->size() == 3);
  for (const std::string &object : *objects) {
    auto alone = codegen::loadHostObjects(std::span(&object, 1), names, target);
    REQUIRE_FALSE(alone.has_value()); // no object holds all five
    INFO(alone.error().message());
    CHECK(contains(alone.error().message(), "kernel 'scale"));
  }
  auto module = codegen::loadHostObjects(*objects, names, target);
  REQUIRE(module.has_value());
  AlignedVector<float> in(128), out(128);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i) - 40.5f;
  for (const std::string &name : names) {
    CAPTURE(name);
    codegen::HostKernelFn fn = (*module)->lookupKernel(name);
    REQUIRE(fn != nullptr);
    std::ranges::fill(out, 0.0f);
    void *args[] = {in.data(), out.data()};
    fn(args);
    for (size_t i = 0; i < in.size(); ++i)
      REQUIRE(out[i] == in[i] * 2.0f);
  }
  // One part, or more parts than kernels, is one object per kernel at most.
  CHECK(codegen::emitHostObjects(std::span(kernels).first(2), target, 8)->size() == 2);
  CHECK(codegen::emitHostObjects(kernels, target, 1)->size() == 1);
}
