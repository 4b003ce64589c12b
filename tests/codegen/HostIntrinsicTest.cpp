// Host JIT tests of math intrinsics against <cmath>, in f32 and f64, scalar
// (vectorized by LLVM) and explicit 4-lane vectors; Fma rounds once and a
// plain a*b+c is never contracted into one.
#include "HostTestUtil.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;
using kiln::testing::JitKernel;

namespace {

/// Distance in units in the last place; NaN vs NaN is 0, NaN vs number is huge.
template <typename F> int64_t ulpDistance(F a, F b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (a == b)
    return 0;
  using Bits = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  auto ordered = [](F x) {
    auto bits = std::bit_cast<Bits>(x);
    return bits < 0 ? static_cast<int64_t>(std::numeric_limits<Bits>::min() - bits)
                    : static_cast<int64_t>(bits);
  };
  return std::llabs(ordered(a) - ordered(b));
}

/// out[i] = fn(in[i]...) with `args` inputs per element.
template <typename F>
AlignedVector<F> applyIntrinsic(Intrinsic fn, const std::vector<AlignedVector<F>> &inputs,
                                int lanes) {
  DType dtype = sizeof(F) == 4 ? DType::F32 : DType::F64;
  int64_t n = static_cast<int64_t>(inputs[0].size());
  REQUIRE(n % lanes == 0);
  std::vector<BufferPtr> params;
  auto i = makeVar("i");
  ExprPtr at = mul(kir::ref(i), index(lanes));
  std::vector<ExprPtr> args;
  for (size_t k = 0; k < inputs.size(); ++k) {
    params.push_back(makeBuffer(fmt::format("in{}", k), dtype, n));
    args.push_back(load(params.back(), at, lanes));
  }
  auto out = makeBuffer("out", dtype, n);
  params.push_back(out);
  StmtPtr body = store(out, at, call(fn, args));
  JitKernel kernel(
      Kernel{fmt::format("call_{}_{}_x{}", intrinsicName(fn), dtypeName(dtype), lanes), params,
             forRange(i, n / lanes, lanes == 1 ? ForKind::Vectorized : ForKind::Serial, body)});
  AlignedVector<F> result(inputs[0].size());
  std::vector<void *> pointers;
  for (const auto &input : inputs)
    pointers.push_back(const_cast<F *>(input.data()));
  pointers.push_back(result.data());
  kernel(pointers);
  return result;
}

template <typename F> AlignedVector<F> range(double low, double high, int count) {
  AlignedVector<F> values;
  for (int k = 0; k < count; ++k)
    values.push_back(static_cast<F>(low + (high - low) * k / (count - 1)));
  return values;
}

struct UnaryCase {
  Intrinsic fn;
  double low, high;
  std::function<double(double)> reference;
  int64_t maxUlps;
};

template <typename F> void checkUnary(const UnaryCase &c) {
  auto inputs = range<F>(c.low, c.high, 1000);
  for (int lanes : {1, 4}) {
    auto result = applyIntrinsic<F>(c.fn, {inputs}, lanes);
    int64_t worst = 0;
    size_t worstAt = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      F expected = static_cast<F>(c.reference(static_cast<double>(inputs[k])));
      int64_t ulps = ulpDistance(result[k], expected);
      if (ulps > worst) {
        worst = ulps;
        worstAt = k;
      }
    }
    INFO(intrinsicName(c.fn) << "(" << inputs[worstAt] << ") = " << result[worstAt]
                             << " is the worst (lanes " << lanes << ")");
    CHECK(worst <= c.maxUlps);
  }
}

const std::vector<UnaryCase> &unaryCases() {
  static const std::vector<UnaryCase> cases{
      {Intrinsic::Exp, -20, 20, [](double x) { return std::exp(x); }, 2},
      {Intrinsic::Log, 1e-6, 1e6, [](double x) { return std::log(x); }, 2},
      {Intrinsic::Sqrt, 0, 1e6, [](double x) { return std::sqrt(x); }, 1},
      {Intrinsic::Rsqrt, 1e-3, 1e6, [](double x) { return 1.0 / std::sqrt(x); }, 2},
      {Intrinsic::Tanh, -10, 10, [](double x) { return std::tanh(x); }, 2},
      {Intrinsic::Erf, -5, 5, [](double x) { return std::erf(x); }, 2},
      {Intrinsic::Sin, -100, 100, [](double x) { return std::sin(x); }, 2},
      {Intrinsic::Cos, -100, 100, [](double x) { return std::cos(x); }, 2},
      {Intrinsic::Abs, -1e6, 1e6, [](double x) { return std::fabs(x); }, 0},
      {Intrinsic::Floor, -100.5, 100.5, [](double x) { return std::floor(x); }, 0},
  };
  return cases;
}

} // namespace

TEST_CASE("f32 unary intrinsics match <cmath> within 2 ulp", "[codegen][host][intrinsic]") {
  for (const auto &c : unaryCases()) {
    SECTION(std::string(intrinsicName(c.fn))) { checkUnary<float>(c); }
  }
}

TEST_CASE("f64 unary intrinsics match <cmath> within 2 ulp", "[codegen][host][intrinsic]") {
  for (const auto &c : unaryCases()) {
    SECTION(std::string(intrinsicName(c.fn))) { checkUnary<double>(c); }
  }
}

TEST_CASE("special values through intrinsics", "[codegen][host][intrinsic]") {
  AlignedVector<float> x{-1.0f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, 4.0f};
  auto sqrt = applyIntrinsic<float>(Intrinsic::Sqrt, {x}, 4);
  CHECK(std::isnan(sqrt[0]));
  CHECK(sqrt[3] == INFINITY);
  CHECK(std::signbit(sqrt[2]));
  auto rsqrt = applyIntrinsic<float>(Intrinsic::Rsqrt, {x}, 1);
  CHECK(rsqrt[1] == INFINITY);
  CHECK(rsqrt[3] == 0.0f);
  CHECK(rsqrt[7] == 0.5f);
  auto log = applyIntrinsic<float>(Intrinsic::Log, {x}, 4);
  CHECK(std::isnan(log[0]));
  CHECK(log[1] == -INFINITY);
  CHECK(log[6] == 0.0f);
  auto tanh = applyIntrinsic<float>(Intrinsic::Tanh, {x}, 4);
  CHECK(tanh[3] == 1.0f);
  CHECK(tanh[4] == -1.0f);
  CHECK(std::isnan(tanh[5]));
  auto erf = applyIntrinsic<float>(Intrinsic::Erf, {x}, 1);
  CHECK(erf[3] == 1.0f);
  CHECK(erf[4] == -1.0f);
  auto abs = applyIntrinsic<float>(Intrinsic::Abs, {x}, 4);
  CHECK(!std::signbit(abs[2]));
  CHECK(abs[4] == INFINITY);
}

TEST_CASE("pow matches std::pow", "[codegen][host][intrinsic]") {
  AlignedVector<double> base64, exponent64;
  for (int k = 0; k < 400; ++k) {
    base64.push_back(0.05 + 0.025 * k);
    exponent64.push_back(-3.0 + 0.015 * k);
  }
  AlignedVector<float> base32(base64.begin(), base64.end()),
      exponent32(exponent64.begin(), exponent64.end());
  for (int lanes : {1, 4}) {
    auto r64 = applyIntrinsic<double>(Intrinsic::Pow, {base64, exponent64}, lanes);
    auto r32 = applyIntrinsic<float>(Intrinsic::Pow, {base32, exponent32}, lanes);
    for (size_t k = 0; k < base64.size(); ++k) {
      REQUIRE(ulpDistance(r64[k], std::pow(base64[k], exponent64[k])) <= 2);
      float expected = static_cast<float>(
          std::pow(static_cast<double>(base32[k]), static_cast<double>(exponent32[k])));
      REQUIRE(ulpDistance(r32[k], expected) <= 2);
    }
  }
}

TEST_CASE("fma rounds once; a*b+c is not contracted", "[codegen][host][intrinsic]") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the 2^-24 is lost when the product
  // rounds to f32 on its own, and kept by a fused multiply-add.
  float a32 = 1.0f + std::ldexp(1.0f, -12);
  float c32 = -(1.0f + std::ldexp(1.0f, -11));
  double a64 = 1.0 + std::ldexp(1.0, -27);
  double c64 = -(1.0 + std::ldexp(1.0, -26));
  for (int lanes : {1, 4}) {
    AlignedVector<float> a(8, a32), c(8, c32);
    auto fused = applyIntrinsic<float>(Intrinsic::Fma, {a, a, c}, lanes);
    for (float v : fused)
      REQUIRE(v == std::ldexp(1.0f, -24));
    AlignedVector<double> a2(8, a64), c2(8, c64);
    auto fused64 = applyIntrinsic<double>(Intrinsic::Fma, {a2, a2, c2}, lanes);
    for (double v : fused64)
      REQUIRE(v == std::ldexp(1.0, -54));
  }
  // The same computation written as a multiply and an add rounds twice.
  const int64_t n = 64;
  auto x = makeBuffer("x", DType::F32, n), y = makeBuffer("y", DType::F32, n);
  auto z = makeBuffer("z", DType::F32, n), out = makeBuffer("out", DType::F32, n);
  auto i = makeVar("i");
  StmtPtr body = store(out, kir::ref(i),
                       add(mul(load(x, kir::ref(i)), load(y, kir::ref(i))), load(z, kir::ref(i))));
  JitKernel kernel(Kernel{"mul_add", {x, y, z, out}, forRange(i, n, ForKind::Vectorized, body)});
  AlignedVector<float> xs(n, a32), zs(n, c32), result(n, 1.0f);
  kernel({xs.data(), xs.data(), zs.data(), result.data()});
  for (float v : result)
    REQUIRE(v == 0.0f);
}

TEST_CASE("integer abs wraps at the minimum", "[codegen][host][intrinsic]") {
  auto in = makeBuffer("in", DType::I32, 4);
  auto out = makeBuffer("out", DType::I32, 4);
  JitKernel kernel(Kernel{
      "abs_i32", {in, out}, store(out, index(0), call(Intrinsic::Abs, {load(in, index(0), 4)}))});
  AlignedVector<int32_t> values{-5, 7, INT32_MIN, 0}, result(4);
  kernel({values.data(), result.data()});
  CHECK(result == AlignedVector<int32_t>{5, 7, INT32_MIN, 0});
}

TEST_CASE("sin and cos of one value (which LLVM may fuse into sincos) link and run",
          "[codegen][host][intrinsic]") {
  const int64_t n = 37;
  auto in = makeBuffer("in", DType::F64, n);
  auto outSin = makeBuffer("out_sin", DType::F64, n);
  auto outCos = makeBuffer("out_cos", DType::F64, n);
  auto i = makeVar("i");
  ExprPtr x = load(in, kir::ref(i));
  StmtPtr body = seq({store(outSin, kir::ref(i), call(Intrinsic::Sin, {x})),
                      store(outCos, kir::ref(i), call(Intrinsic::Cos, {x}))});
  JitKernel kernel(Kernel{"sin_cos", {in, outSin, outCos}, forRange(i, n, ForKind::Serial, body)});
  AlignedVector<double> input(n), sines(n), cosines(n);
  for (int64_t k = 0; k < n; ++k)
    input[k] = 0.37 * static_cast<double>(k) - 5.0;
  kernel({input.data(), sines.data(), cosines.data()});
  for (int64_t k = 0; k < n; ++k) {
    REQUIRE(ulpDistance(sines[k], std::sin(input[k])) <= 2);
    REQUIRE(ulpDistance(cosines[k], std::cos(input[k])) <= 2);
  }
}

TEST_CASE("a vectorized loop's transcendentals call libmvec's vector variants",
          "[codegen][host][intrinsic]") {
  const codegen::CpuTarget &target = kiln::testing::hostTarget();
  bool avx512 = target.features.find("+avx512f") != std::string::npos && target.vectorBits >= 512;
  bool avx2 = target.features.find("+avx2") != std::string::npos;
  if (!avx2) {
    WARN("skipped: this CPU has no AVX2, and libmvec's variants need it");
    return;
  }
  // out[i] = tanh(exp(in[i])) over a vectorized loop: exp is an LLVM intrinsic, tanh a libm call.
  auto in = makeBuffer("in", DType::F32, 1000), out = makeBuffer("out", DType::F32, 1000);
  auto i = makeVar("i");
  ExprPtr x = load(in, kir::ref(i));
  ExprPtr tanhOfExp = call(Intrinsic::Tanh, {call(Intrinsic::Exp, {x})});
  Kernel kernel{"exp_then_tanh", {in, out},
                forRange(i, 1000, ForKind::Vectorized, store(out, kir::ref(i), tanhOfExp))};
  auto ir = codegen::emitHostLlvmIr(kernel, target, /*optimized=*/true);
  REQUIRE(ir);
  std::string isa = avx512 ? "_ZGVeN16v_" : "_ZGVdN8v_";
  CHECK(ir->find(isa + "expf") != std::string::npos);
  CHECK(ir->find(isa + "tanhf") != std::string::npos);
  // And the JIT binds them: the same kernel runs and agrees with <cmath>.
  JitKernel jit(kernel);
  AlignedVector<float> input = range<float>(-6, 2, 1000), output(1000);
  // Special values and overflow among ordinary lanes take libmvec's fallback path.
  const float specials[] = {NAN, INFINITY, -INFINITY, 100.0f, -100.0f, -0.0f};
  for (size_t k = 0; k < std::size(specials); ++k)
    input[k * 97 + 3] = specials[k];
  jit({input.data(), output.data()});
  int64_t worst = 0;
  for (size_t k = 0; k < input.size(); ++k)
    worst = std::max(worst, ulpDistance(output[k], std::tanh(std::exp(input[k]))));
  CHECK(worst <= 4);
}

TEST_CASE("a loop vectorized 4 wide calls libmvec's 4-lane variants",
          "[codegen][host][intrinsic]") {
  // A loop runs 4 wide where its widest value fills a register in 4 lanes: f32 on a 128-bit
  // target, or f64 on a 256-bit one (a softmax sums its exponentials so). Each 4-lane exp
  // was one libm call per lane. The host's target with 128-bit vectors makes it 4 wide on
  // any x86-64 host.
  if (kiln::testing::hostTarget().triple.rfind("x86_64", 0) != 0) {
    WARN("skipped: libmvec's variants are x86-64's; this host is "
         << kiln::testing::hostTarget().triple);
    return;
  }
  codegen::CpuTarget target = kiln::testing::hostTarget();
  target.vectorBits = 128;
  auto in = makeBuffer("in", DType::F32, 1000), out = makeBuffer("out", DType::F32, 1000);
  auto i = makeVar("i");
  Kernel kernel{"exp_4_wide",
                {in, out},
                forRange(i, 1000, ForKind::Vectorized,
                         store(out, kir::ref(i), call(Intrinsic::Exp, {load(in, kir::ref(i))})))};
  auto ir = codegen::emitHostLlvmIr(kernel, target, /*optimized=*/true);
  REQUIRE(ir);
  CHECK(ir->find("_ZGVbN4v_expf") != std::string::npos);
  // The JIT binds it: the kernel, compiled for that target, runs and agrees with <cmath>.
  std::vector<Kernel> kernels = {kernel};
  auto module = codegen::compileHostModule(kernels, target);
  REQUIRE(module);
  codegen::HostKernelFn fn = (*module)->lookupKernel("exp_4_wide");
  REQUIRE(fn != nullptr);
  AlignedVector<float> input = range<float>(-6, 2, 1000), output(1000);
  std::vector<void *> args = {input.data(), output.data()};
  fn(args.data());
  int64_t worst = 0;
  for (size_t k = 0; k < input.size(); ++k)
    worst = std::max(worst, ulpDistance(output[k], std::exp(input[k])));
  CHECK(worst <= 4);
}
