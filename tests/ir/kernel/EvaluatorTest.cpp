// The kernel IR evaluator: every expression kind with hand-computed values,
// loads, stores and casts of every dtype, vectors, predicates, loop kinds,
// allocation, and the exact text of its errors.
#include "ir/kernel/KernelTestUtil.h"

#include "support/FloatConvert.h"

#include <limits>

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Evaluates scalar expressions (free of variables and loads) by storing each
/// into its own element of an output buffer of `dtype`.
std::vector<double> evalScalars(DType dtype, const std::vector<ExprPtr> &exprs) {
  auto out = makeBuffer("out", dtype, static_cast<int64_t>(exprs.size()));
  std::vector<StmtPtr> stores;
  for (size_t i = 0; i < exprs.size(); ++i)
    stores.push_back(store(out, index(static_cast<int64_t>(i)), exprs[i]));
  Kernel kernel{"scalars", {out}, seq(stores)};
  std::vector<HostTensor> params{HostTensor(dtype, {static_cast<int64_t>(exprs.size())})};
  auto result = evaluateKernel(kernel, params);
  INFO(printKernel(kernel));
  REQUIRE(result);
  return params[0].toDoubles();
}

double evalOne(const ExprPtr &e) { return evalScalars(e->type().dtype, {e})[0]; }

std::string evalError(const Kernel &kernel, std::vector<HostTensor> params) {
  auto result = evaluateKernel(kernel, params);
  REQUIRE_FALSE(result);
  return result.error().message();
}

ExprPtr f32(double v) { return floatImm(v, Type::scalar(DType::F32)); }
ExprPtr f64(double v) { return floatImm(v, Type::scalar(DType::F64)); }
ExprPtr i32(int64_t v) { return intImm(v, Type::scalar(DType::I32)); }
ExprPtr i8(int64_t v) { return intImm(v, Type::scalar(DType::I8)); }

void checkSameDoubles(const std::vector<double> &actual, const std::vector<double> &expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": " << actual[i] << " vs " << expected[i]);
    if (std::isnan(expected[i]))
      CHECK(std::isnan(actual[i]));
    else
      CHECK(std::bit_cast<uint64_t>(actual[i]) == std::bit_cast<uint64_t>(expected[i]));
  }
}

} // namespace

TEST_CASE("evaluator: integer arithmetic wraps and truncates like the hardware",
          "[kernel][evaluator]") {
  using enum BinaryOp;
  int64_t max64 = std::numeric_limits<int64_t>::max();
  checkSameDoubles(
      evalScalars(DType::I64, {raw(Add, index(max64 - 5), index(10)), raw(Sub, index(-7), index(3)),
                               raw(Div, index(-7), index(2)), raw(Mod, index(-7), index(2)),
                               raw(Mod, index(7), index(-2)), raw(Min, index(-3), index(2)),
                               raw(Max, index(-3), index(2)), raw(And, index(12), index(10)),
                               raw(Or, index(12), index(10)), neg(index(5)),
                               raw(Div, index(7), index(0)), raw(Mod, index(7), index(0)),
                               raw(Div, index(7), index(-1)), raw(Mod, index(7), index(-1)),
                               raw(Div, index(std::numeric_limits<int64_t>::min()), index(-1))}),
      {static_cast<double>(std::numeric_limits<int64_t>::min() + 4), -10, -3, -1, 1, -3, 2, 8, 14,
       -5, 0, 0, -7, 0, static_cast<double>(std::numeric_limits<int64_t>::min())});
  checkSameDoubles(
      evalScalars(DType::I32,
                  {raw(Mul, i32(65536), i32(65536 + 3)), raw(Add, i32(2147483647), i32(1)),
                   neg(i32(-2147483648LL)), raw(Div, i32(-2147483648LL), i32(-1)),
                   raw(Mod, i32(-2147483648LL), i32(-1))}),
      {196608, -2147483648.0, -2147483648.0, -2147483648.0, 0});
  checkSameDoubles(
      evalScalars(DType::I8, {raw(Add, i8(127), i8(1)), raw(Mul, i8(16), i8(9)),
                              call(Intrinsic::Abs, {i8(-128)}), call(Intrinsic::Abs, {i8(-5)})}),
      {-128, -112, -128, 5});
}

TEST_CASE("evaluator: float arithmetic rounds in the expression's dtype", "[kernel][evaluator]") {
  using enum BinaryOp;
  double tiny = std::ldexp(1.0, -30);
  // 1 + 2^-30 is 1 in f32 but exact in f64.
  CHECK(evalOne(raw(Add, f32(1), f32(tiny))) == 1.0);
  CHECK(evalOne(raw(Add, f64(1), f64(tiny))) == 1.0 + tiny);
  CHECK(evalOne(raw(Div, f32(1), f32(3))) == static_cast<double>(1.0f / 3.0f));
  CHECK(evalOne(raw(Mod, f64(7.5), f64(2))) == 1.5);
  CHECK(evalOne(raw(Mod, f64(-7.5), f64(2))) == -1.5);
  checkSameDoubles(
      evalScalars(DType::F32, {raw(Min, f32(kNaN), f32(1)), raw(Max, f32(1), f32(kNaN)),
                               raw(Min, f32(-2), f32(1)), raw(Max, f32(-2), f32(1)),
                               raw(Div, f32(1), f32(0)), neg(f32(0))}),
      {kNaN, kNaN, -2, 1, kInf, -0.0});
}

TEST_CASE("evaluator: comparisons, logic and select", "[kernel][evaluator]") {
  using enum BinaryOp;
  auto nan = f64(kNaN);
  checkSameDoubles(
      evalScalars(DType::Bool,
                  {raw(Lt, index(-1), index(0)), raw(Ge, index(-1), index(0)), raw(Eq, nan, nan),
                   raw(Ne, nan, nan), raw(Lt, nan, f64(1)), raw(Le, f64(1), f64(1)),
                   raw(Gt, f64(2), f64(1)), raw(And, boolImm(true), boolImm(false)),
                   raw(Or, boolImm(true), boolImm(false)), logicalNot(boolImm(false)),
                   raw(Lt, boolImm(false), boolImm(true))}),
      {1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1});
  auto c = makeVar("c", Type::boolean());
  auto out = makeBuffer("out", DType::I64, 2);
  Kernel kernel{
      "select",
      {out},
      seq({let(c, raw(Lt, index(1), index(2)),
               store(out, index(0), std::make_shared<Select>(kir::ref(c), index(10), index(20)))),
           store(out, index(1),
                 std::make_shared<Select>(logicalNot(raw(Lt, index(1), index(2))), index(10),
                                          index(20)))})};
  std::vector<HostTensor> params{HostTensor(DType::I64, {2})};
  REQUIRE(evaluateKernel(kernel, params));
  CHECK(params[0].toDoubles() == std::vector<double>{10, 20});
}

TEST_CASE("evaluator: intrinsics in f32 and f64", "[kernel][evaluator]") {
  using enum Intrinsic;
  checkSameDoubles(
      evalScalars(DType::F64, {call(Exp, {f64(1)}), call(Log, {f64(2)}), call(Sqrt, {f64(2)}),
                               call(Rsqrt, {f64(4)}), call(Tanh, {f64(0.5)}), call(Erf, {f64(0.5)}),
                               call(Sin, {f64(1)}), call(Cos, {f64(1)}), call(Abs, {f64(-2.5)}),
                               call(Floor, {f64(-2.5)}), call(Pow, {f64(2), f64(10)}),
                               call(Fma, {f64(3), f64(4), f64(5)})}),
      {std::exp(1.0), std::log(2.0), std::sqrt(2.0), 0.5, std::tanh(0.5), std::erf(0.5),
       std::sin(1.0), std::cos(1.0), 2.5, -3, 1024, 17});
  // f32 computes with the float functions, not double ones rounded to f32.
  double erf32 = evalOne(call(Erf, {f32(0.5)}));
  CHECK(erf32 == static_cast<double>(std::erf(0.5f)));
  // fma rounds once: with a = 1 + 2^-23, a*a - (1 + 2^-22) = 2^-46 exactly.
  double a = 1.0 + std::ldexp(1.0, -23);
  CHECK(evalOne(call(Fma, {f32(a), f32(a), f32(-(1.0 + std::ldexp(1.0, -22)))})) ==
        std::ldexp(1.0, -46));
}

TEST_CASE("evaluator: loads and stores of every dtype round-trip", "[kernel][evaluator]") {
  for (int d = 0; d < kNumDTypes; ++d) {
    auto dtype = static_cast<DType>(d);
    INFO(dtypeName(dtype));
    auto in = makeBuffer("in", dtype, 37), out = makeBuffer("out", dtype, 37);
    auto i = makeVar("i");
    // Reversed copy: out[i] = in[36 - i].
    Kernel kernel{"copy",
                  {in, out},
                  forRange(i, 37, ForKind::Serial,
                           store(out, kir::ref(i), load(in, sub(index(36), kir::ref(i)))))};
    std::vector<HostTensor> params = randomParams(kernel, 11);
    REQUIRE(evaluateKernel(kernel, params));
    for (int64_t k = 0; k < 37; ++k)
      CHECK(params[1].getDouble(k) == params[0].getDouble(36 - k));
  }
}

TEST_CASE("evaluator: casts between every pair of dtypes follow the graph's cast",
          "[kernel][evaluator]") {
  // HostTensor::castTo implements the graph's cast independently; values cover
  // fractions, negatives, overflow for every narrower type, and NaN/inf.
  std::vector<double> values{0.0,   -0.0,  1.0,    -1.0,  2.5,    -2.5,    3.75,
                             127.0, 128.0, -129.0, 300.7, -300.7, 65504.0, 70000.0,
                             1e10,  -3e9,  1e30,   kInf,  -kInf,  kNaN};
  for (int from = 0; from < kNumDTypes; ++from) {
    auto src = static_cast<DType>(from);
    HostTensor input(src, {static_cast<int64_t>(values.size())});
    for (size_t k = 0; k < values.size(); ++k) {
      double v = values[k];
      // An integer or bool source holds integers: give it the value as a graph cast would.
      if (!isFloatingPoint(src))
        v = std::isfinite(v) ? roundToDType(std::trunc(std::fmod(v, 1e9)), src) : 0.0;
      input.setDouble(static_cast<int64_t>(k), v);
    }
    for (int to = 0; to < kNumDTypes; ++to) {
      auto dst = static_cast<DType>(to);
      INFO(dtypeName(src) << " -> " << dtypeName(dst));
      auto in = makeBuffer("in", src, input.numElements());
      auto out = makeBuffer("out", dst, input.numElements());
      auto i = makeVar("i");
      Kernel kernel{
          "cast",
          {in, out},
          forRange(i, input.numElements(), ForKind::Serial,
                   store(out, kir::ref(i), cast(load(in, kir::ref(i)), Type::scalar(dst))))};
      std::vector<HostTensor> params{input, HostTensor(dst, input.shape())};
      REQUIRE(evaluateKernel(kernel, params));
      HostTensor expected = input.castTo(dst);
      for (int64_t k = 0; k < input.numElements(); ++k) {
        double e = expected.getDouble(k), a = params[1].getDouble(k);
        INFO("value " << input.getDouble(k) << ": expected " << e << ", got " << a);
        if (std::isnan(e))
          CHECK(std::isnan(a));
        else if (dst == DType::I64 && std::fabs(input.getDouble(k)) >= 9.2e18)
          CHECK(a == (input.getDouble(k) > 0 ? 9223372036854775807.0 : -9223372036854775808.0));
        else
          CHECK(a == e);
      }
    }
  }
}

TEST_CASE("evaluator: integer to narrow float conversions round once", "[kernel][evaluator]") {
  // 2^62 + 2^54 + 1 lies just above the midpoint between two bf16 values
  // (2^62 and 2^62 + 2^55); rounding through a double first would land exactly
  // on the midpoint and round to even (down). Rounding once goes up.
  int64_t value = (int64_t{1} << 62) + (int64_t{1} << 54) + 1;
  auto out = makeBuffer("out", DType::BF16, 1);
  Kernel kernel{
      "convert", {out}, store(out, index(0), cast(index(value), Type::scalar(DType::BF16)))};
  std::vector<HostTensor> params{HostTensor(DType::BF16, {1})};
  REQUIRE(evaluateKernel(kernel, params));
  CHECK(params[0].getDouble(0) == std::ldexp(1.0, 62) + std::ldexp(1.0, 55));
  // And an i64 to f32 conversion rounds once too.
  CHECK(evalOne(cast(index(value), Type::scalar(DType::F32))) ==
        static_cast<double>(static_cast<float>(value)));
}

TEST_CASE("evaluator: vectors, broadcasts and predicated loads and stores", "[kernel][evaluator]") {
  // y[i*4 .. i*4+3] = x[i*4 ..] * 2 + 1 with the tail masked: 10 elements, 3 vector steps.
  auto x = makeBuffer("x", DType::F32, 10), y = makeBuffer("y", DType::F32, 10);
  auto i = makeVar("i");
  ExprPtr base = mul(kir::ref(i), index(4));
  // The lane offsets 0, 1, 2, 3 come from a buffer: an IntImm repeats one value.
  auto offsets = makeBuffer("offsets", DType::I64, 4);
  ExprPtr mask = lt(add(broadcast(base, 4), load(offsets, index(0), 4)), broadcast(index(10), 4));
  ExprPtr value = add(mul(load(x, base, 4, mask), broadcast(f32(2), 4)), broadcast(f32(1), 4));
  Kernel kernel{
      "axpb", {x, y, offsets}, forRange(i, 3, ForKind::Vectorized, store(y, base, value, mask))};
  std::vector<HostTensor> params{
      HostTensor::fromDoubles(DType::F32, {10}, std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),
      HostTensor::fromDoubles(DType::F32, {10}, std::vector<double>(10, -99)),
      HostTensor::fromDoubles(DType::I64, {4}, std::vector<double>{0, 1, 2, 3})};
  auto result = evaluateKernel(kernel, params);
  INFO(printKernel(kernel));
  REQUIRE(result);
  CHECK(params[1].toDoubles() == std::vector<double>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19});

  // A masked-off lane reads nothing (no bounds error) and yields zero.
  auto z = makeBuffer("z", DType::F32, 4);
  Kernel masked{
      "masked",
      {x, z, offsets},
      store(z, index(0),
            load(x, index(8), 4, lt(load(offsets, index(0), 4), broadcast(index(2), 4))))};
  std::vector<HostTensor> maskedParams{params[0], HostTensor(DType::F32, {4}), params[2]};
  REQUIRE(evaluateKernel(masked, maskedParams));
  CHECK(maskedParams[1].toDoubles() == std::vector<double>{8, 9, 0, 0});
}

TEST_CASE("evaluator: host loops run serially in order; lets and allocations scope",
          "[kernel][evaluator]") {
  for (ForKind kind :
       {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized, ForKind::Parallel}) {
    INFO(forKindName(kind));
    // Prefix sums: out[i] = out[i - 1] + i, which only a serial in-order run computes.
    auto out = makeBuffer("out", DType::I64, 8);
    auto scratch = makeBuffer("scratch", DType::I64, 2, MemScope::Local);
    auto i = makeVar("i"), prev = makeVar("prev");
    StmtPtr body = let(prev,
                       select(gt(kir::ref(i), index(0)),
                              load(out, kir::max(sub(kir::ref(i), index(1)), index(0))), index(0)),
                       store(out, kir::ref(i), add(kir::ref(prev), kir::ref(i))));
    // The allocation starts zeroed: scratch[1] is read before any write.
    StmtPtr withScratch = allocate(scratch, seq({forLoop(i, index(1), index(7), kind, body),
                                                 store(out, index(0), load(scratch, index(1)))}));
    Kernel kernel{"prefix", {out}, withScratch};
    std::vector<HostTensor> params{
        HostTensor::fromDoubles(DType::I64, {8}, std::vector<double>(8, 0))};
    REQUIRE(evaluateKernel(kernel, params));
    CHECK(params[0].toDoubles() == std::vector<double>{0, 1, 3, 6, 10, 15, 21, 28});
  }
}

TEST_CASE("evaluator: block and thread loops run serially in order", "[kernel][evaluator]") {
  // A well-formed GPU kernel (a block.x loop around a thread.y loop) whose threads compute
  // prefix sums from each other's results: a race on a GPU, in order in the evaluator.
  auto out = makeBuffer("out", DType::I64, 8);
  auto b = makeVar("b"), t = makeVar("t"), i = makeVar("i"), prev = makeVar("prev");
  StmtPtr body = let(prev,
                     select(gt(kir::ref(i), index(0)),
                            load(out, kir::max(sub(kir::ref(i), index(1)), index(0))), index(0)),
                     store(out, kir::ref(i), add(kir::ref(prev), kir::ref(i))));
  Kernel kernel{"prefix",
                {out},
                forRange(b, 2, ForKind::BlockX,
                         forRange(t, 4, ForKind::ThreadY,
                                  let(i, add(mul(kir::ref(b), index(4)), kir::ref(t)), body)))};
  std::vector<HostTensor> params{
      HostTensor::fromDoubles(DType::I64, {8}, std::vector<double>(8, 0))};
  REQUIRE(evaluateKernel(kernel, params));
  CHECK(params[0].toDoubles() == std::vector<double>{0, 1, 3, 6, 10, 15, 21, 28});
}

TEST_CASE("evaluator: out-of-bounds accesses are errors naming kernel, buffer, index and size",
          "[kernel][evaluator]") {
  auto a = makeBuffer("A", DType::F32, 64), out = makeBuffer("out", DType::F32, 64);
  auto i = makeVar("i");
  std::vector<HostTensor> params{HostTensor(DType::F32, {64}), HostTensor(DType::F32, {64})};
  Kernel readPastEnd{"k1",
                     {a, out},
                     forRange(i, 64, ForKind::Serial,
                              store(out, kir::ref(i), load(a, add(kir::ref(i), index(1)))))};
  CHECK(evalError(readPastEnd, params) ==
        "kernel k1: out-of-bounds load A[64] (A has 64 elements)");
  Kernel negative{"k2", {a, out}, store(out, index(0), load(a, index(-1)))};
  CHECK(evalError(negative, params) == "kernel k2: out-of-bounds load A[-1] (A has 64 elements)");
  Kernel vectorStore{"k3", {a, out}, store(out, index(60), load(a, index(0), 8))};
  CHECK(evalError(vectorStore, params) ==
        "kernel k3: out-of-bounds store out[64] (out has 64 elements; 8-lane access at out[60])");
  // A select evaluates both arms, so the guarded load still faults.
  Kernel guarded{
      "k4",
      {a, out},
      store(out, index(0), std::make_shared<Select>(boolImm(false), load(a, index(99)), f32(0)))};
  CHECK(evalError(guarded, params) == "kernel k4: out-of-bounds load A[99] (A has 64 elements)");
  // A failing vector store writes none of its lanes.
  std::vector<HostTensor> poisoned{
      HostTensor(DType::F32, {64}),
      HostTensor::fromDoubles(DType::F32, {64}, std::vector<double>(64, -1))};
  Kernel partial{"k5", {a, out}, store(out, index(62), broadcast(f32(5), 4))};
  CHECK(evalError(partial, poisoned) ==
        "kernel k5: out-of-bounds store out[64] (out has 64 elements; 4-lane access at out[62])");
  CHECK(poisoned[1].getDouble(62) == -1);
  CHECK(poisoned[1].getDouble(63) == -1);
}

TEST_CASE("evaluator: ill-formed kernels get the verifier's error", "[kernel][evaluator]") {
  auto out = makeBuffer("out", DType::I64, 4);
  auto flags = makeBuffer("flags", DType::Bool, 4);
  auto n = makeVar("n");
  std::vector<HostTensor> params{HostTensor(DType::I64, {4})};
  Kernel boolAdd{
      "booladd", {flags}, store(flags, index(0), raw(BinaryOp::Add, boolImm(true), boolImm(true)))};
  std::vector<HostTensor> flagParams{HostTensor(DType::Bool, {4})};
  auto undefined = evaluateKernel(boolAdd, flagParams);
  REQUIRE_FALSE(undefined);
  CHECK(undefined.error().code() == ErrorCode::VerifyError);
  CHECK(undefined.error().message() ==
        "kernel booladd: add is not defined on bool in `true + true`, in `store bool "
        "flags[0] = true + true`");
  Kernel unbound{"free", {out}, store(out, kir::ref(n), index(1))};
  CHECK(evalError(unbound, params) ==
        "kernel free: variable n is used outside its scope (no enclosing for or let "
        "binds it), in `store i64 out[n] = 1`");
  auto local = makeBuffer("tmp", DType::I64, 4, MemScope::Local);
  Kernel unallocated{"noalloc", {out}, store(local, index(0), index(1))};
  CHECK(evalError(unallocated, params) ==
        "kernel noalloc: store into buffer tmp, which is neither a parameter nor "
        "allocated around this use, in `store i64 tmp[0] = 1`");
}

TEST_CASE("evaluator: bad parameters and runaway loops are errors", "[kernel][evaluator]") {
  auto out = makeBuffer("out", DType::I64, 4);
  std::vector<HostTensor> params{HostTensor(DType::I64, {4})};
  Kernel one{"one", {out}, store(out, index(0), index(1))};
  CHECK(evalError(one, {}) == "kernel one: takes 1 buffers, got 0");
  CHECK(evalError(one, {HostTensor(DType::I32, {4})}) ==
        "kernel one: parameter out is i64[4], got a tensor i32[4]");
  CHECK(evalError(one, {HostTensor(DType::I64, {2, 3})}) ==
        "kernel one: parameter out is i64[4], got a tensor i64[2,3]");
  std::vector<std::byte> bytes(16);
  std::vector<std::span<std::byte>> spans{bytes};
  auto result = evaluateKernel(one, spans);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "kernel one: parameter out (i64[4]) needs 32 bytes, got 16");

  auto i = makeVar("i");
  Kernel forever{"long",
                 {out},
                 forRange(i, int64_t{1} << 40, ForKind::Serial, store(out, index(0), kir::ref(i)))};
  EvaluateOptions options;
  options.maxLoopIterations = 1000;
  auto limited = evaluateKernel(forever, params, options);
  REQUIRE_FALSE(limited);
  CHECK(limited.error().message() == "kernel long: more than 1000 loop iterations");
  CHECK(params[0].getDouble(0) == 999);
}

TEST_CASE("evaluator: a subexpression shared under several bindings of a variable",
          "[kernel][evaluator]") {
  auto out = makeBuffer("out", DType::I64, 8);
  auto x = makeVar("x");
  ExprPtr twice = mul(kir::ref(x), index(2)); // one node, used under three lets of x in turn
  StmtPtr body = seq({
      let(x, index(1), seq({store(out, index(0), kir::ref(x)), store(out, index(1), twice)})),
      let(x, index(3), store(out, index(2), twice)),
      let(x, index(5), store(out, index(3), add(twice, add(twice, index(1))))),
  });
  std::vector<HostTensor> params{HostTensor(DType::I64, {8})};
  REQUIRE(evaluateKernel(Kernel{"shared", {out}, body}, params));
  CHECK(params[0].toDoubles() == std::vector<double>{1, 2, 6, 21, 0, 0, 0, 0});
  // After its let, the variable is out of scope again; rebinding it inside its own let
  // (shadowing) is ill formed too: both are the verifier's errors.
  Kernel after{"after", {out}, seq({body, store(out, index(6), kir::ref(x))})};
  CHECK(evalError(after, params) ==
        "kernel after: variable x is used outside its scope (no enclosing for or let "
        "binds it), in `store i64 out[6] = x`");
  Kernel shadow{"shadow",
                {out},
                let(x, index(1), let(x, add(kir::ref(x), index(10)), store(out, index(0), kir::ref(x))))};
  auto rebound = evaluateKernel(shadow, params);
  REQUIRE_FALSE(rebound);
  CHECK(rebound.error().code() == ErrorCode::VerifyError);
  CHECK(rebound.error().message() ==
        "kernel shadow: let rebinds variable x, which is already in scope, in `let x: "
        "i64 = x + 10`");
}
