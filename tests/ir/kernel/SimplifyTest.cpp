// simplify: each rule with its exact printed result and an evaluator check
// that the simplified kernel computes bit for bit what the original does on
// random inputs (negative values included, so rules that need non-negative
// operands are exercised where they must not fire).
#include "ir/kernel/KernelTestUtil.h"
#include "ir/kernel/Visitor.h"
#include "passes/kernel/Passes.h"

#include <limits>

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;
using enum kiln::kir::BinaryOp;

namespace {

/// Expressions over `in`/`fin` (64 elements) inside
///   for i in [0, 8) { for j in [0, 8) { out[i * 8 + j] = e } }
struct RuleFixture {
  BufferPtr in = makeBuffer("in", DType::I64, 64);
  BufferPtr fin = makeBuffer("fin", DType::F32, 64);
  VarPtr i = makeVar("i"), j = makeVar("j");
  ExprPtr flat = raw(Add, raw(Mul, kir::ref(i), index(8)), kir::ref(j));
  ExprPtr x = load(in, flat);
  ExprPtr y = load(in, kir::ref(j));
  ExprPtr fx = load(fin, flat);

  Kernel kernelFor(const ExprPtr &e) const {
    auto out = makeBuffer("out", e->type().dtype, 64);
    return Kernel{
        "rule",
        {in, fin, out},
        forRange(i, 8, ForKind::Serial, forRange(j, 8, ForKind::Serial, store(out, flat, e)))};
  }

  /// The simplified stored value, printed; checks the simplified kernel
  /// computes what the original does.
  std::string simplified(const ExprPtr &e) const {
    Kernel original = kernelFor(e);
    Kernel result = simplifyKernel(original);
    requireSameResults(original, result);
    struct FindStore : StmtVisitor {
      const Store *found = nullptr;
      void visitStore(const Store &node) override { found = &node; }
    } finder;
    finder.visit(result.body);
    REQUIRE(finder.found);
    CHECK(printExpr(finder.found->index) == "i * 8 + j");
    return printExpr(finder.found->value);
  }
};

ExprPtr f32c(double v) { return floatImm(v, Type::scalar(DType::F32)); }
ExprPtr f64c(double v) { return floatImm(v, Type::scalar(DType::F64)); }

/// Simplifies the kernel, compares its printed body with `expected`, and
/// checks it computes what the original does.
void checkKernel(const Kernel &original, const std::string &expected) {
  Kernel result = simplifyKernel(original);
  CHECK(printKernel(result) == expected);
  requireSameResults(original, result);
}

} // namespace

TEST_CASE("simplify folds integer constants with wrapping", "[kernel][simplify]") {
  RuleFixture f;
  CHECK(f.simplified(raw(Mul, raw(Add, index(3), index(4)), raw(Sub, index(10), index(4)))) ==
        "42");
  CHECK(f.simplified(raw(Add, index(std::numeric_limits<int64_t>::max()), index(1))) ==
        "-9223372036854775808");
  CHECK(f.simplified(raw(Div, index(-7), index(2))) == "-3");
  CHECK(f.simplified(raw(Mod, index(-7), index(2))) == "-1");
  Type i8 = Type::scalar(DType::I8);
  CHECK(f.simplified(raw(Add, intImm(100, i8), intImm(100, i8))) == "-56i8");
  CHECK(f.simplified(neg(intImm(-128, i8))) == "-128i8");
  CHECK(f.simplified(raw(Lt, index(3), index(2))) == "false");
  CHECK(f.simplified(logicalNot(raw(Lt, index(3), index(2)))) == "true");
  // Integer division is total, as the graph defines it.
  CHECK(f.simplified(raw(Div, index(7), index(0))) == "0");
  CHECK(f.simplified(raw(Mod, index(7), index(0))) == "0");
  CHECK(f.simplified(raw(Div, index(std::numeric_limits<int64_t>::min()), index(-1))) ==
        "-9223372036854775808");
}

TEST_CASE("simplify applies integer identities and reassociates constants", "[kernel][simplify]") {
  RuleFixture f;
  const std::string x = "load i64 in[i * 8 + j]";
  CHECK(f.simplified(raw(Add, f.x, index(0))) == x);
  CHECK(f.simplified(raw(Add, index(0), f.x)) == x);
  CHECK(f.simplified(raw(Sub, f.x, index(0))) == x);
  CHECK(f.simplified(raw(Mul, f.x, index(1))) == x);
  CHECK(f.simplified(raw(Mul, index(1), f.x)) == x);
  CHECK(f.simplified(raw(Div, f.x, index(1))) == x);
  CHECK(f.simplified(raw(Mod, f.x, index(1))) == "0");
  CHECK(f.simplified(raw(Div, f.x, index(0))) == "0");
  CHECK(f.simplified(raw(Mod, f.x, index(0))) == "0");
  CHECK(f.simplified(raw(Mod, f.x, index(-1))) == "0");
  CHECK(f.simplified(raw(Div, f.x, index(-1))) == "-" + x);
  CHECK(f.simplified(raw(Div, neg(f.x), index(-1))) == x);
  CHECK(f.simplified(raw(Mul, f.x, index(0))) == "0");
  CHECK(f.simplified(raw(Sub, f.x, f.x)) == "0");
  CHECK(f.simplified(raw(Add, index(5), f.x)) == x + " + 5");
  CHECK(f.simplified(raw(Add, f.x, index(-5))) == x + " - 5");
  CHECK(f.simplified(raw(Sub, f.x, index(-5))) == x + " + 5");
  CHECK(f.simplified(raw(Mul, raw(Mul, f.x, index(3)), index(5))) == x + " * 15");
  CHECK(f.simplified(raw(Mul, index(3), raw(Mul, index(5), f.x))) == x + " * 15");
  CHECK(f.simplified(raw(Add, raw(Add, f.x, index(3)), index(5))) == x + " + 8");
  CHECK(f.simplified(raw(Add, raw(Sub, f.x, index(3)), index(1))) == x + " - 2");
  CHECK(f.simplified(raw(Sub, raw(Add, f.x, index(3)), index(3))) == x);
  CHECK(f.simplified(raw(Add, raw(Add, f.x, index(2)), f.y)) == x + " + load i64 in[j] + 2");
  CHECK(f.simplified(raw(Add, f.y, raw(Add, f.x, index(2)))) == "load i64 in[j] + " + x + " + 2");
  CHECK(f.simplified(raw(Sub, raw(Add, f.x, index(2)), f.y)) == x + " - load i64 in[j] + 2");
  CHECK(f.simplified(raw(Div, raw(Div, f.x, index(4)), index(2))) == x + " / 8");
  // Offsets move outward through a scale: two addresses a constant apart share their base.
  CHECK(f.simplified(raw(Mul, raw(Add, f.x, index(8)), index(64))) == x + " * 64 + 512");
  CHECK(f.simplified(raw(Mul, raw(Sub, f.x, index(1)), index(3))) == x + " * 3 - 3");
  CHECK(f.simplified(raw(Add, raw(Mul, raw(Add, f.x, index(8)), index(64)), f.y)) ==
        x + " * 64 + load i64 in[j] + 512");
  CHECK(f.simplified(neg(neg(f.x))) == x);
  CHECK(f.simplified(raw(Min, f.x, f.x)) == x);
}

TEST_CASE("simplify splits div and mod of a split index using loop bounds", "[kernel][simplify]") {
  RuleFixture f;
  auto i = kir::ref(f.i), j = kir::ref(f.j);
  CHECK(f.simplified(raw(Div, f.flat, index(8))) == "i");
  CHECK(f.simplified(raw(Mod, f.flat, index(8))) == "j");
  CHECK(f.simplified(raw(Div, raw(Add, j, raw(Mul, i, index(8))), index(8))) == "i");
  CHECK(f.simplified(raw(Div, raw(Add, f.flat, index(3)), index(8))) == "i + (j + 3) / 8");
  CHECK(f.simplified(raw(Mod, raw(Add, f.flat, index(16)), index(8))) == "j");
  CHECK(f.simplified(raw(Div, raw(Add, f.flat, index(16)), index(8))) == "i + 2");
  CHECK(f.simplified(raw(Div, raw(Add, raw(Mul, i, index(16)), raw(Mul, j, index(2))), index(8))) ==
        "i * 2 + j * 2 / 8");
  CHECK(f.simplified(raw(Div, raw(Mul, raw(Add, raw(Mul, i, index(2)), index(1)), index(4)),
                         index(8))) == "i");
  CHECK(f.simplified(raw(Div, j, index(8))) == "0");
  CHECK(f.simplified(raw(Mod, j, index(8))) == "j");
  // Recombining a flattened index through its quotient and remainder.
  CHECK(f.simplified(raw(Add, raw(Mul, raw(Div, f.flat, index(8)), index(8)),
                         raw(Mod, f.flat, index(8)))) == "i * 8 + j");
  // A numerator that may be negative keeps its division (truncation is not floor).
  CHECK(f.simplified(raw(Div, raw(Sub, f.flat, index(4)), index(8))) == "(i * 8 + j - 4) / 8");
  CHECK(f.simplified(raw(Mod, raw(Sub, f.flat, index(4)), index(8))) == "(i * 8 + j - 4) % 8");
  // A load has no known range.
  CHECK(f.simplified(raw(Div, raw(Add, raw(Mul, f.x, index(8)), j), index(8))) ==
        "(load i64 in[i * 8 + j] * 8 + j) / 8");
  // A remainder that reaches c does not vanish.
  CHECK(f.simplified(raw(Div, raw(Add, raw(Mul, i, index(4)), j), index(4))) == "i + j / 4");
}

TEST_CASE("simplify decides comparisons, min and max from loop bounds", "[kernel][simplify]") {
  RuleFixture f;
  auto i = kir::ref(f.i), j = kir::ref(f.j);
  CHECK(f.simplified(raw(Lt, f.flat, index(64))) == "true");
  CHECK(f.simplified(raw(Lt, f.flat, index(63))) == "i * 8 + j < 63");
  CHECK(f.simplified(raw(Ge, i, index(8))) == "false");
  CHECK(f.simplified(raw(Gt, index(8), i)) == "true");
  CHECK(f.simplified(raw(Eq, f.flat, index(70))) == "false");
  CHECK(f.simplified(raw(Ne, raw(Add, j, index(8)), j)) == "true");
  CHECK(f.simplified(raw(Ne, j, i)) == "j != i");
  CHECK(f.simplified(raw(Le, j, j)) == "true");
  CHECK(f.simplified(raw(Min, i, index(100))) == "i");
  CHECK(f.simplified(raw(Max, j, index(7))) == "7");
  CHECK(f.simplified(raw(Max, j, index(3))) == "max(j, 3)");
  CHECK(f.simplified(raw(Lt, f.x, index(64))) == "load i64 in[i * 8 + j] < 64");
}

TEST_CASE("simplify folds select, logic and casts", "[kernel][simplify]") {
  RuleFixture f;
  auto i = kir::ref(f.i), j = kir::ref(f.j);
  const std::string x = "load i64 in[i * 8 + j]";
  CHECK(f.simplified(std::make_shared<Select>(raw(Lt, index(1), index(2)), f.x, f.y)) == x);
  CHECK(f.simplified(std::make_shared<Select>(raw(Lt, i, index(0)), f.x, f.y)) == "load i64 in[j]");
  CHECK(f.simplified(std::make_shared<Select>(raw(Lt, i, j), f.x, f.x)) == x);
  CHECK(f.simplified(std::make_shared<Select>(raw(Lt, i, j), f.x, f.y)) ==
        "select(i < j, " + x + ", load i64 in[j])");
  CHECK(f.simplified(logicalNot(raw(Lt, i, j))) == "i >= j");
  CHECK(f.simplified(logicalNot(logicalNot(raw(Lt, i, j)))) == "i < j");
  CHECK(f.simplified(raw(And, raw(Lt, i, j), boolImm(true))) == "i < j");
  CHECK(f.simplified(raw(And, boolImm(false), raw(Lt, i, j))) == "false");
  CHECK(f.simplified(raw(Or, raw(Lt, i, j), boolImm(true))) == "true");
  CHECK(f.simplified(raw(Eq, raw(Lt, i, j), boolImm(false))) == "i >= j");
  CHECK(f.simplified(cast(index(300), Type::scalar(DType::I8))) == "44i8");
  CHECK(f.simplified(cast(index(-3), Type::scalar(DType::F32))) == "-3.0f32");
  CHECK(f.simplified(cast(f32c(-2.75), Type::scalar(DType::I32))) == "-2i32");
  CHECK(f.simplified(cast(f32c(3e9), Type::scalar(DType::I32))) == "2147483647i32");
  CHECK(f.simplified(cast(f64c(0.1), Type::scalar(DType::F32))) == "0.1f32");
  CHECK(f.simplified(cast(index(2), Type::boolean())) == "true");
  // A narrow-float constant is not allowed in kernel IR: the cast stays.
  CHECK(f.simplified(cast(f32c(static_cast<float>(1.1)), Type::scalar(DType::F16))) ==
        "cast<f16>(1.1f32)");
}

TEST_CASE("simplify folds floats in their dtype and keeps inexact identities",
          "[kernel][simplify]") {
  RuleFixture f;
  const std::string fx = "load f32 fin[i * 8 + j]";
  CHECK(f.simplified(raw(Add, f32c(static_cast<float>(0.1)), f32c(static_cast<float>(0.2)))) ==
        "0.3f32");
  CHECK(f.simplified(raw(Add, f64c(0.1), f64c(0.2))) == "0.30000000000000004f64");
  CHECK(f.simplified(raw(Div, f32c(1), f32c(0))) == "inff32");
  CHECK(f.simplified(raw(Max, f32c(std::nan("")), f32c(1))) == "nanf32");
  CHECK(f.simplified(call(Intrinsic::Sqrt, {f32c(2)})) == "1.4142135f32");
  CHECK(f.simplified(call(Intrinsic::Fma, {f32c(2), f32c(3), f32c(1)})) == "7.0f32");
  CHECK(f.simplified(call(Intrinsic::Exp, {f32c(1)})) == "exp(1.0f32)"); // libm may differ
  CHECK(f.simplified(raw(Mul, f.fx, f32c(1))) == fx);
  CHECK(f.simplified(raw(Mul, f32c(1), f.fx)) == fx);
  CHECK(f.simplified(raw(Div, f.fx, f32c(1))) == fx);
  CHECK(f.simplified(raw(Sub, f.fx, f32c(0))) == fx);
  CHECK(f.simplified(raw(Add, f.fx, f32c(-0.0))) == fx);
  // x + 0 is -0 + 0 = +0 for x = -0, and x * 0 is NaN for infinities: both stay.
  CHECK(f.simplified(raw(Add, f.fx, f32c(0))) == fx + " + 0.0f32");
  CHECK(f.simplified(raw(Mul, f.fx, f32c(0))) == fx + " * 0.0f32");
  CHECK(f.simplified(raw(Sub, f.fx, f.fx)) == fx + " - " + fx);
  CHECK(f.simplified(neg(neg(f.fx))) == fx);
  CHECK(f.simplified(logicalNot(raw(Lt, f.fx, f32c(1)))) == "!(" + fx + " < 1.0f32)");
  CHECK(f.simplified(logicalNot(raw(Eq, f.fx, f32c(1)))) == fx + " != 1.0f32");
}

TEST_CASE("simplify folds vector constants and broadcasts", "[kernel][simplify]") {
  auto out = makeBuffer("out", DType::I32, 8);
  Type i32 = Type::scalar(DType::I32);
  ExprPtr sum = raw(Add, broadcast(intImm(3, i32), 8), broadcast(intImm(4, i32), 8));
  ExprPtr product = raw(Mul, raw(Mul, load(out, index(0), 8), broadcast(intImm(2, i32), 8)),
                        broadcast(intImm(3, i32), 8));
  checkKernel(Kernel{"vectors",
                     {out},
                     seq({store(out, index(0), raw(Add, product, raw(Sub, sum, sum))),
                          store(out, index(0), sum)})},
              "kernel vectors(out: i32[8]) {\n"
              "  store i32x8 out[0] = load i32x8 out[0] * broadcast(6i32, 8)\n"
              "  store i32x8 out[0] = broadcast(7i32, 8)\n"
              "}\n");
}

TEST_CASE("simplify removes dead loops and branches and inlines trivial lets",
          "[kernel][simplify]") {
  auto in = makeBuffer("in", DType::F32, 16), out = makeBuffer("out", DType::F32, 16);
  auto i = makeVar("i"), j = makeVar("j"), k = makeVar("k"), n = makeVar("n"), t = makeVar("t");
  auto unused = makeVar("unused");
  StmtPtr copy = store(out, kir::ref(i), load(in, kir::ref(i)));
  StmtPtr body = seq({
      forRange(k, 0, ForKind::Parallel, store(out, kir::ref(k), load(in, index(99)))),
      // extent 1: the loop becomes its body with j = 3
      forLoop(j, index(3), index(1), ForKind::Serial, store(out, kir::ref(j), load(in, index(0)))),
      // a let of a constant is substituted, a let nobody reads disappears
      let(n, index(5),
          let(unused, raw(Mul, kir::ref(n), index(7)),
              store(out, kir::ref(n), load(in, raw(Add, kir::ref(n), index(1)))))),
      ifThen(raw(Lt, index(1), index(2)), store(out, index(6), f32c(1)),
             store(out, index(6), f32c(2))),
      ifThen(raw(Gt, index(1), index(2)), store(out, index(7), f32c(1))),
      std::make_shared<Block>(
          std::vector<StmtPtr>{std::make_shared<Block>(std::vector<StmtPtr>{})}),
      forRange(
          i, 16, ForKind::Serial,
          seq({let(t, raw(Add, kir::ref(i), index(0)),
                   ifThen(raw(Lt, kir::ref(t), index(16)), copy)),
               ifThen(raw(Lt, kir::ref(i), index(8)), emptyStmt(),
                      store(out, kir::ref(i), f32c(0))),
               store(out, kir::ref(i), load(in, kir::ref(i)), boolImm(false)),
               store(out, kir::ref(i), load(in, kir::ref(i), 1, boolImm(true)), boolImm(true))})),
  });
  checkKernel(Kernel{"dead", {in, out}, body}, "kernel dead(in: f32[16], out: f32[16]) {\n"
                                               "  store f32 out[3] = load f32 in[0]\n"
                                               "  store f32 out[5] = load f32 in[6]\n"
                                               "  store f32 out[6] = 1.0f32\n"
                                               "  for i in [0, 16) serial {\n"
                                               "    store f32 out[i] = load f32 in[i]\n"
                                               "    if i >= 8 {\n"
                                               "      store f32 out[i] = 0.0f32\n"
                                               "    }\n"
                                               "    store f32 out[i] = load f32 in[i]\n"
                                               "  }\n"
                                               "}\n");
}

TEST_CASE("simplify keeps GPU-bound loops of extent 1 and loops of unknown extent",
          "[kernel][simplify]") {
  auto out = makeBuffer("out", DType::I64, 8), sizes = makeBuffer("sizes", DType::I64, 1);
  auto b = makeVar("b"), t = makeVar("t"), n = makeVar("n"), p = makeVar("p");
  StmtPtr body = forRange(b, 1, ForKind::BlockX,
                          forRange(t, 8, ForKind::ThreadX,
                                   store(out, kir::ref(t), raw(Add, kir::ref(b), kir::ref(t)))));
  StmtPtr dynamic = let(n, kir::min(load(sizes, index(0)), index(8)),
                        forLoop(p, index(0), kir::ref(n), ForKind::Serial,
                                store(out, kir::ref(p), raw(Mul, kir::ref(p), index(1)))));
  checkKernel(Kernel{"gpu", {out}, body},
              "kernel gpu(out: i64[8]) {\n"
              "  for b in [0, 1) block.x {\n"
              "    for t in [0, 8) thread.x {\n"
              "      store i64 out[t] = b + t\n"
              "    }\n"
              "  }\n"
              "}\n");
  checkKernel(Kernel{"dynamic", {out, sizes}, dynamic},
              "kernel dynamic(out: i64[8], sizes: i64[1]) {\n"
              "  let n = min(load i64 sizes[0], 8)\n"
              "  for p in [0, n) serial {\n"
              "    store i64 out[p] = p\n"
              "  }\n"
              "}\n");
}

TEST_CASE("simplify drops predicates it can prove and loads it knows are off",
          "[kernel][simplify]") {
  // A vector tail: 20 elements in steps of 8; the predicate holds for the
  // first two steps, which the bounds cannot see per lane, so it stays; a
  // scalar predicate that the loop bounds decide goes.
  auto in = makeBuffer("in", DType::F16, 24), out = makeBuffer("out", DType::F16, 24);
  auto offsets = makeBuffer("offsets", DType::I64, 8);
  auto v = makeVar("v");
  ExprPtr base = raw(Mul, kir::ref(v), index(8));
  ExprPtr mask = lt(add(broadcast(base, 8), load(offsets, index(0), 8)), broadcast(index(20), 8));
  Kernel kernel{
      "tail",
      {in, out, offsets},
      forRange(v, 3, ForKind::Serial,
               seq({store(out, base, load(in, base, 8, mask), mask),
                    store(out, raw(Add, base, index(1)),
                          load(in, base, 1, raw(Lt, base, index(17))), raw(Lt, base, index(24))),
                    store(out, index(0), load(in, index(0), 1, raw(Gt, base, index(99))))}))};
  Kernel result = simplifyKernel(kernel);
  CHECK(printKernel(result) ==
        "kernel tail(in: f16[24], out: f16[24], offsets: i64[8]) {\n"
        "  for v in [0, 3) serial {\n"
        "    store f16x8 out[v * 8] = (load f16x8 in[v * 8] if broadcast(v * 8, 8) + load i64x8 "
        "offsets[0] < broadcast(20, 8)) if broadcast(v * 8, 8) + load i64x8 offsets[0] < "
        "broadcast(20, 8)\n"
        "    store f16 out[v * 8 + 1] = load f16 in[v * 8]\n"
        "    store f16 out[0] = cast<f16>(0.0f32)\n"
        "  }\n"
        "}\n");
  // offsets must hold 0..7 for the kernel to be in bounds.
  std::vector<HostTensor> a = randomParams(kernel, 5);
  for (int l = 0; l < 8; ++l)
    a[2].setDouble(l, l);
  std::vector<HostTensor> b = a;
  REQUIRE(evaluateKernel(kernel, a));
  REQUIRE(evaluateKernel(result, b));
  CHECK(a[1].toDoubles() == b[1].toDoubles());
}

TEST_CASE("simplify reaches a fixed point through lets and nested rules", "[kernel][simplify]") {
  // let a = i * 0 + 4 -> 4, inlined; then (j * 4 + a - 4) / 4 = j; the let b
  // of j is inlined, and the loop of extent (a - 3) = 1 disappears.
  auto out = makeBuffer("out", DType::I64, 64);
  auto i = makeVar("i"), j = makeVar("j"), a = makeVar("a"), b = makeVar("b"), k = makeVar("k");
  StmtPtr inner =
      let(b,
          raw(Div, raw(Sub, raw(Add, raw(Mul, kir::ref(j), kir::ref(a)), kir::ref(a)), index(4)),
              kir::ref(a)),
          forLoop(k, index(0), raw(Sub, kir::ref(a), index(3)), ForKind::Unrolled,
                  store(out, raw(Add, raw(Mul, kir::ref(i), index(8)), kir::ref(b)),
                        raw(Add, kir::ref(k), kir::ref(b)))));
  Kernel kernel{"fixed",
                {out},
                forRange(i, 8, ForKind::Parallel,
                         let(a, raw(Add, raw(Mul, kir::ref(i), index(0)), index(4)),
                             forRange(j, 8, ForKind::Serial, inner)))};
  checkKernel(kernel, "kernel fixed(out: i64[64]) {\n"
                      "  for i in [0, 8) parallel {\n"
                      "    for j in [0, 8) serial {\n"
                      "      store i64 out[i * 8 + j] = j\n"
                      "    }\n"
                      "  }\n"
                      "}\n");
}

TEST_CASE("simplify leaves an already simple kernel untouched (same nodes)", "[kernel][simplify]") {
  auto in = makeBuffer("in", DType::F32, 64), out = makeBuffer("out", DType::F32, 64);
  auto i = makeVar("i");
  StmtPtr body = forRange(i, 64, ForKind::Parallel,
                          store(out, kir::ref(i), mul(load(in, kir::ref(i)), f32c(2))));
  CHECK(simplifyStmt(body) == body);
  CHECK(isEmptyStmt(simplifyStmt(forRange(i, 0, ForKind::Serial, body))));
  CHECK(isEmptyStmt(simplifyStmt(nullptr)));
}

namespace {

/// Random expression trees over the loop variables, loads and small constants.
struct ExpressionGenerator {
  Rng rng{2024};
  const RuleFixture &f;

  int pick(int n) { return static_cast<int>(rng.nextU64() % static_cast<uint64_t>(n)); }

  ExprPtr integerLeaf() {
    switch (pick(5)) {
    case 0: return kir::ref(f.i);
    case 1: return kir::ref(f.j);
    case 2: return f.x;
    case 3: return f.y;
    default: return index(pick(19) - 9);
    }
  }

  ExprPtr integer(int depth) {
    if (depth == 0 || pick(4) == 0)
      return integerLeaf();
    using enum BinaryOp;
    switch (pick(9)) {
    case 0: return raw(Add, integer(depth - 1), integer(depth - 1));
    case 1: return raw(Sub, integer(depth - 1), integer(depth - 1));
    case 2: return raw(Mul, integer(depth - 1), index(pick(9) - 2));
    case 3: return raw(Div, integer(depth - 1), pick(3) ? index(pick(14) - 4) : integer(depth - 1));
    case 4: return raw(Mod, integer(depth - 1), pick(3) ? index(pick(14) - 4) : integer(depth - 1));
    case 5: return raw(pick(2) ? Min : Max, integer(depth - 1), integer(depth - 1));
    case 6:
      return std::make_shared<Select>(condition(depth - 1), integer(depth - 1), integer(depth - 1));
    case 7: return neg(integer(depth - 1));
    default: return raw(Add, raw(Mul, integer(depth - 1), index(8)), integer(depth - 1));
    }
  }

  ExprPtr condition(int depth) {
    using enum BinaryOp;
    static constexpr BinaryOp kComparisons[] = {Eq, Ne, Lt, Le, Gt, Ge};
    switch (pick(4)) {
    case 0: return logicalNot(condition(std::max(depth - 1, 0)));
    case 1:
      if (depth > 0)
        return raw(pick(2) ? And : Or, condition(depth - 1), condition(depth - 1));
      [[fallthrough]];
    default: return raw(kComparisons[pick(6)], integer(depth), integer(depth));
    }
  }

  ExprPtr floatLeaf() {
    static const double kConstants[] = {
        0.0, -0.0, 1.0, -1.0, 2.5, 0.1f, std::numeric_limits<double>::infinity(), std::nan("")};
    switch (pick(3)) {
    case 0: return f.fx;
    case 1: return load(f.fin, kir::ref(f.j));
    default: return f32c(kConstants[pick(8)]);
    }
  }

  ExprPtr floating(int depth) {
    if (depth == 0 || pick(4) == 0)
      return floatLeaf();
    using enum BinaryOp;
    static constexpr BinaryOp kOps[] = {Add, Sub, Mul, Div, Mod, Min, Max};
    switch (pick(5)) {
    case 0: return neg(floating(depth - 1));
    case 1: return call(Intrinsic::Sqrt, {floating(depth - 1)});
    case 2: return cast(integer(depth - 1), f32Type());
    default: return raw(kOps[pick(7)], floating(depth - 1), floating(depth - 1));
    }
  }

  static Type f32Type() { return Type::scalar(DType::F32); }
};

} // namespace

TEST_CASE("simplify preserves the value of random integer expressions", "[kernel][simplify]") {
  RuleFixture f;
  ExpressionGenerator generator{.f = f};
  for (int n = 0; n < 150; ++n) {
    ExprPtr e = generator.integer(4);
    INFO(printExpr(e));
    Kernel original = f.kernelFor(e);
    requireSameResults(original, simplifyKernel(original));
  }
}

TEST_CASE("simplify preserves random float expressions bit for bit", "[kernel][simplify]") {
  RuleFixture f;
  ExpressionGenerator generator{.f = f};
  for (int n = 0; n < 150; ++n) {
    ExprPtr e = generator.floating(4);
    INFO(printExpr(e));
    Kernel original = f.kernelFor(e);
    requireSameResults(original, simplifyKernel(original));
  }
}
