// NVPTX codegen of math (libdevice and correctly rounded intrinsics), casts
// touching the narrow floats and integers, and non-trapping integer division.
#include "tests/codegen/gpu/GpuCodegenTestUtil.h"

#include <fmt/format.h>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::compileAndAssemble;
using kiln::testing::ptxHas;

namespace {

const std::vector<std::string> kArchs = {"sm_80", "sm_90a"};

/// One block of `threads` threads running body(t).
Kernel threadKernel(std::string name, std::vector<BufferPtr> params, int64_t threads,
                    const std::function<StmtPtr(ExprPtr)> &body) {
  VarPtr t = makeVar("t");
  return Kernel{std::move(name), std::move(params),
                forRange(t, threads, ForKind::ThreadX, body(kir::ref(t)))};
}

} // namespace

TEST_CASE("nvptx: every intrinsic on f32 and f64", "[gpu-codegen]") {
  const Intrinsic intrinsics[] = {Intrinsic::Exp,  Intrinsic::Log,  Intrinsic::Sqrt,
                                  Intrinsic::Rsqrt, Intrinsic::Tanh, Intrinsic::Erf,
                                  Intrinsic::Sin,  Intrinsic::Cos,  Intrinsic::Abs,
                                  Intrinsic::Floor, Intrinsic::Pow, Intrinsic::Fma};
  const int64_t n = 96, count = std::size(intrinsics);
  for (DType dtype : {DType::F32, DType::F64}) {
    BufferPtr x = makeBuffer("x", dtype, n), y = makeBuffer("y", dtype, n),
              out = makeBuffer("out", dtype, n * count);
    Kernel kernel = threadKernel(fmt::format("math_{}", dtypeName(dtype)), {x, y, out}, n,
                                 [&](ExprPtr t) {
                                   std::vector<StmtPtr> stores;
                                   for (int64_t k = 0; k < count; ++k) {
                                     Intrinsic fn = intrinsics[k];
                                     std::vector<ExprPtr> args{load(x, t)};
                                     if (fn == Intrinsic::Pow || fn == Intrinsic::Fma)
                                       args.push_back(load(y, t));
                                     if (fn == Intrinsic::Fma)
                                       args.push_back(load(x, t));
                                     stores.push_back(store(out, add(index(k * n), t), call(fn, args)));
                                   }
                                   return seq(stores);
                                 });
    std::string suffix = dtype == DType::F32 ? "f32" : "f64";
    for (const std::string &arch : kArchs) {
      INFO(dtypeName(dtype) << " on " << arch);
      std::string llvmIr;
      auto ptx = codegen::compilePtxWithLlvm(std::span(&kernel, 1), testing::gpuTarget(arch), &llvmIr);
      REQUIRE(ptx);
      // libdevice is linked, internalized and inlined: no call leaves the kernel.
      CHECK(ptx->find(".extern") == std::string::npos);
      CHECK(ptx->find("__nv_") == std::string::npos);
      CHECK(llvmIr.find("@__nv_") == std::string::npos);
      CHECK(llvmIr.find("!\"nvvm-reflect-ftz\", i32 0}") != std::string::npos);
      CHECK(llvmIr.find("__nvvm_reflect") == std::string::npos);
      std::string assembled = compileAndAssemble({kernel}, arch);
      CHECK(ptxHas(assembled, "sqrt.rn." + suffix));
      CHECK(assembled.find("sqrt.approx." + suffix) == std::string::npos);
      // rsqrt = 1 / sqrt, both correctly rounded (never rsqrt.approx).
      CHECK(ptxHas(assembled, "rcp.rn." + suffix));
      CHECK(assembled.find("rsqrt.approx") == std::string::npos);
      CHECK(ptxHas(assembled, "fma.rn." + suffix));
      CHECK(ptxHas(assembled, "cvt.rmi." + suffix + "." + suffix));
      CHECK(ptxHas(assembled, "abs." + suffix));
      // The kernel's own arithmetic keeps subnormals (libdevice's internal
      // approximations may use .ftz where its range reduction allows).
      CHECK(assembled.find("sqrt.rn.ftz") == std::string::npos);
    }
  }
}

TEST_CASE("nvptx: casts touching f16, bf16, f8 and integers", "[gpu-codegen]") {
  const DType all[] = {DType::F64,    DType::F32,    DType::F16, DType::BF16, DType::F8E4M3,
                       DType::F8E5M2, DType::I64,    DType::I32, DType::I8,   DType::Bool};
  auto touches = [](DType d) {
    return d == DType::F16 || d == DType::BF16 || d == DType::F8E4M3 || d == DType::F8E5M2 ||
           isInteger(d);
  };
  const int64_t n = 64;
  for (const std::string &arch : kArchs) {
    std::vector<Kernel> kernels;
    for (DType from : all) {
      BufferPtr x = makeBuffer("x", from, n);
      std::vector<BufferPtr> params{x};
      std::vector<StmtPtr> stores;
      VarPtr t = makeVar("t");
      for (DType to : all) {
        if (from == to || !(touches(from) || touches(to)))
          continue;
        BufferPtr out = makeBuffer(fmt::format("to_{}", dtypeName(to)), to, n);
        params.push_back(out);
        stores.push_back(store(out, kir::ref(t), cast(load(x, kir::ref(t)), Type::scalar(to))));
      }
      kernels.push_back(Kernel{fmt::format("cast_from_{}", dtypeName(from)), params,
                               forRange(t, n, ForKind::ThreadX, seq(stores))});
    }
    // f16x4 <-> f32x4 as vectors too.
    BufferPtr h = makeBuffer("h", DType::F16, 4 * n), f = makeBuffer("f", DType::F32, 4 * n);
    kernels.push_back(threadKernel("cast_vector", {h, f}, n, [&](ExprPtr t) {
      ExprPtr at = mul(t, index(4));
      return seq({store(f, at, cast(load(h, at, 4), Type{DType::F32, 4})),
                  store(h, at, cast(mul(load(f, at, 4), load(f, at, 4)), Type{DType::F16, 4}))});
    }));
    std::string ptx = compileAndAssemble(kernels, arch);
    INFO(arch);
    CHECK(ptxHas(ptx, "cvt.rn.f16.f32"));
    CHECK(ptxHas(ptx, "cvt.f32.f16"));
    CHECK(ptxHas(ptx, "cvt.rn.bf16.f32"));
    CHECK(ptxHas(ptx, "cvt.rz.f32.f64")); // f64 sources round to odd, then once
    CHECK(ptxHas(ptx, "cvt.rzi.s32.f32")); // float -> int truncates
    if (arch == "sm_90a") {
      CHECK(ptxHas(ptx, "cvt.rn.satfinite.e4m3x2.f32"));
      CHECK(ptxHas(ptx, "cvt.rn.satfinite.e5m2x2.f32"));
    } else {
      CHECK(ptx.find("e4m3x2") == std::string::npos); // sm_80: the software encoder
      CHECK(ptxHas(ptx, "cvt.rni.f32.f32"));         // its subnormal rounding
    }
  }
}

TEST_CASE("nvptx: integer division and remainder never trap", "[gpu-codegen]") {
  for (DType dtype : {DType::I32, DType::I64}) {
    BufferPtr a = makeBuffer("a", dtype, 128), b = makeBuffer("b", dtype, 128),
              q = makeBuffer("q", dtype, 128), r = makeBuffer("r", dtype, 128);
    Kernel kernel = threadKernel(fmt::format("divmod_{}", dtypeName(dtype)), {a, b, q, r}, 128,
                                 [&](ExprPtr t) {
                                   return seq({store(q, t, div(load(a, t), load(b, t))),
                                               store(r, t, mod(load(a, t), load(b, t)))});
                                 });
    std::string bits = dtype == DType::I32 ? "32" : "64";
    for (const std::string &arch : kArchs) {
      std::string ptx = compileAndAssemble({kernel}, arch);
      CHECK(ptxHas(ptx, "div.s" + bits));
      // x % y is x - (x / y) * y on the same division: no second div.
      CHECK(ptx.find("div.s" + bits) == ptx.rfind("div.s" + bits));
      CHECK(ptxHas(ptx, "setp.eq.s" + bits)); // the 0 and -1 divisor guards
    }
  }
}
