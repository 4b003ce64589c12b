// Golden text of the kernel IR printer: whole kernels, every expression and
// statement form, precedence, naming of repeated names, constants.
#include "ir/kernel/KernelTestUtil.h"

#include <cstdlib>
#include <limits>

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;

namespace {

/// out[i, j] = sum_k A[i, k] * B[k, j] for 64x64 matrices, with a register accumulator.
Kernel matmulKernel() {
  auto a = makeBuffer("A", DType::F32, 4096);
  auto b = makeBuffer("B", DType::F32, 4096);
  auto out = makeBuffer("out", DType::F32, 4096);
  auto acc = makeBuffer("acc", DType::F32, 1, MemScope::Register);
  auto i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
  Type f32 = Type::scalar(DType::F32);
  StmtPtr update =
      store(acc, index(0),
            add(load(acc, index(0)), mul(load(a, add(mul(kir::ref(i), index(64)), kir::ref(k))),
                                         load(b, add(mul(kir::ref(k), index(64)), kir::ref(j))))));
  StmtPtr body = allocate(
      acc, seq({store(acc, index(0), floatImm(0, f32)), forRange(k, 64, ForKind::Serial, update),
                store(out, add(mul(kir::ref(i), index(64)), kir::ref(j)), load(acc, index(0)))}));
  return Kernel{"k3_matmul",
                {a, b, out},
                forRange(i, 64, ForKind::Parallel, forRange(j, 64, ForKind::Serial, body))};
}

} // namespace

TEST_CASE("printKernel prints a matmul kernel", "[kernel][printer]") {
  CHECK(printKernel(matmulKernel()) ==
        "kernel k3_matmul(A: f32[4096], B: f32[4096], out: f32[4096]) {\n"
        "  for i in [0, 64) parallel {\n"
        "    for j in [0, 64) serial {\n"
        "      alloc acc: f32[1] register\n"
        "      store f32 acc[0] = 0.0f32\n"
        "      for k in [0, 64) serial {\n"
        "        store f32 acc[0] = load f32 acc[0] + load f32 A[i * 64 + k] * load f32 B[k * 64 + "
        "j]\n"
        "      }\n"
        "      store f32 out[i * 64 + j] = load f32 acc[0]\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("printKernel prints vectors, predicates, casts and non-global params",
          "[kernel][printer]") {
  auto x = makeBuffer("x", DType::F16, 100);
  auto y = makeBuffer("y", DType::F32, 100);
  auto tile = makeBuffer("tile", DType::F32, 32, MemScope::Shared);
  auto i = makeVar("i");
  ExprPtr base = mul(kir::ref(i), index(8));
  ExprPtr lanes = broadcast(base, 8);
  ExprPtr mask =
      lt(add(lanes, std::make_shared<IntImm>(3, Type{DType::I64, 8})), broadcast(index(100), 8));
  ExprPtr value = mul(cast(load(x, base, 8, mask), Type{DType::F32, 8}),
                      broadcast(floatImm(1.5, Type::scalar(DType::F32)), 8));
  Kernel kernel{
      "scale", {x, y, tile}, forRange(i, 13, ForKind::Vectorized, store(y, base, value, mask))};
  CHECK(printKernel(kernel) ==
        "kernel scale(x: f16[100], y: f32[100], tile: f32[32] shared) {\n"
        "  for i in [0, 13) vectorized {\n"
        "    store f32x8 y[i * 8] = cast<f32x8>((load f16x8 x[i * 8] if broadcast(i * 8, 8) + "
        "3i64x8 < broadcast(100, 8))) * broadcast(1.5f32, 8) if broadcast(i * 8, 8) + 3i64x8 < "
        "broadcast(100, 8)\n"
        "  }\n"
        "}\n");
}

TEST_CASE("printer names repeated and empty names by first appearance", "[kernel][printer]") {
  auto out = makeBuffer("out", DType::I64, 16);
  auto out2 = makeBuffer("out", DType::I64, 16); // a different buffer with the same name
  auto i1 = makeVar("i"), i2 = makeVar("i"), taken = makeVar("i.1"), anonymous = makeVar("");
  StmtPtr body = seq({
      forRange(i1, 4, ForKind::Serial, store(out, kir::ref(i1), kir::ref(i1))),
      forRange(i2, 4, ForKind::Serial, store(out2, kir::ref(i2), kir::ref(taken))),
      let(anonymous, kir::ref(taken), store(out, kir::ref(anonymous), kir::ref(anonymous))),
  });
  CHECK(printKernel(Kernel{"names", {out, out2}, body}) ==
        "kernel names(out: i64[16], out.1: i64[16]) {\n"
        "  for i in [0, 4) serial {\n"
        "    store i64 out[i] = i\n"
        "  }\n"
        "  for i.1 in [0, 4) serial {\n"
        "    store i64 out.1[i.1] = i.1.1\n"
        "  }\n"
        "  let v = i.1.1\n"
        "  store i64 out[v] = v\n"
        "}\n");
}

TEST_CASE("printer braces a let or alloc that other statements follow", "[kernel][printer]") {
  auto out = makeBuffer("out", DType::F64, 4);
  auto tmp = makeBuffer("tmp", DType::F64, 2, MemScope::Local);
  auto x = makeVar("x", Type::scalar(DType::F64));
  auto n = makeVar("n");
  Type f64 = Type::scalar(DType::F64);
  StmtPtr body = seq({
      let(x, floatImm(0.25, f64), store(out, index(0), kir::ref(x))),
      allocate(tmp, store(tmp, index(1), floatImm(-2, f64))),
      let(n, index(3),
          seq({store(out, kir::ref(n), floatImm(1e-300, f64)),
               std::make_shared<Evaluate>(kir::ref(n))})),
  });
  CHECK(printStmt(body) == "let x: f64 = 0.25f64 {\n"
                           "  store f64 out[0] = x\n"
                           "}\n"
                           "alloc tmp: f64[2] local {\n"
                           "  store f64 tmp[1] = -2.0f64\n"
                           "}\n"
                           "let n = 3\n"
                           "store f64 out[n] = 1e-300f64\n"
                           "eval n\n");
}

TEST_CASE("printer prints if/else, nested blocks and loop ranges", "[kernel][printer]") {
  auto out = makeBuffer("out", DType::I32, 8);
  auto i = makeVar("i"), n = makeVar("n");
  Type i32 = Type::scalar(DType::I32);
  StmtPtr nested = std::make_shared<Block>(std::vector<StmtPtr>{
      std::make_shared<Block>(std::vector<StmtPtr>{store(out, index(0), intImm(1, i32))}),
      std::make_shared<Block>(std::vector<StmtPtr>{}),
  });
  StmtPtr body = seq({
      forLoop(i, index(4), index(60), ForKind::Unrolled,
              ifThen(lt(kir::ref(i), kir::ref(n)), store(out, kir::ref(i), intImm(-7, i32)),
                     store(out, kir::ref(i), intImm(7, i32)))),
      forLoop(i, kir::ref(n), index(8), ForKind::ThreadX, nested),
      forLoop(i, index(0), add(kir::ref(n), index(2)), ForKind::BlockY,
              ifThen(boolImm(true), store(out, index(0), intImm(0, i32)))),
  });
  CHECK(printStmt(body) == "for i in [4, 64) unrolled {\n"
                           "  if i < n {\n"
                           "    store i32 out[i] = -7i32\n"
                           "  } else {\n"
                           "    store i32 out[i] = 7i32\n"
                           "  }\n"
                           "}\n"
                           "for i in [n, n + 8) thread.x {\n"
                           "  {\n"
                           "    store i32 out[0] = 1i32\n"
                           "  }\n"
                           "  {}\n"
                           "}\n"
                           "for i in [0, n + 2) block.y {\n"
                           "  if true {\n"
                           "    store i32 out[0] = 0i32\n"
                           "  }\n"
                           "}\n");
}

TEST_CASE("printExpr uses minimal parentheses with C precedence", "[kernel][printer]") {
  auto a = kir::ref(makeVar("a")), b = kir::ref(makeVar("b")), c = kir::ref(makeVar("c"));
  using enum BinaryOp;
  CHECK(printExpr(raw(Mul, raw(Add, a, b), c)) == "(a + b) * c");
  CHECK(printExpr(raw(Add, a, raw(Mul, b, c))) == "a + b * c");
  CHECK(printExpr(raw(Sub, raw(Sub, a, b), c)) == "a - b - c");
  CHECK(printExpr(raw(Sub, a, raw(Sub, b, c))) == "a - (b - c)");
  CHECK(printExpr(raw(Div, a, raw(Mul, b, c))) == "a / (b * c)");
  CHECK(printExpr(raw(Mod, raw(Div, a, b), c)) == "a / b % c");
  CHECK(printExpr(neg(raw(Add, a, b))) == "-(a + b)");
  CHECK(printExpr(neg(neg(a))) == "-(-a)");
  CHECK(printExpr(neg(index(-3))) == "-(-3)");
  CHECK(printExpr(raw(Mul, a, index(-3))) == "a * -3");
  CHECK(printExpr(raw(Min, raw(Add, a, b), raw(Max, c, index(0)))) == "min(a + b, max(c, 0))");
  auto p = lt(a, b), q = ge(b, c);
  CHECK(printExpr(logicalNot(logicalAnd(p, q))) == "!(a < b && b >= c)");
  CHECK(printExpr(raw(Or, raw(And, p, q), eq(a, c))) == "a < b && b >= c || a == c");
  CHECK(printExpr(raw(And, p, raw(Or, q, p))) == "a < b && (b >= c || a < b)");
  CHECK(printExpr(raw(Eq, p, raw(Ne, a, b))) == "a < b == (a != b)");
  CHECK(printExpr(raw(And, a, b)) == "a & b");
  CHECK(printExpr(raw(Or, a, b)) == "a | b");
  CHECK(printExpr(select(p, a, raw(Add, b, c))) == "select(a < b, a, b + c)");
  auto x = kir::ref(makeVar("x", Type::scalar(DType::F32)));
  CHECK(printExpr(call(Intrinsic::Fma, {x, x, x})) == "fma(x, x, x)");
  CHECK(printExpr(call(Intrinsic::Rsqrt, {x})) == "rsqrt(x)");
  CHECK(printExpr(cast(a, Type::scalar(DType::BF16))) == "cast<bf16>(a)");
  CHECK(printExpr(nullptr) == "<null>");
}

TEST_CASE("printExpr prints constants with their types", "[kernel][printer]") {
  auto f = [](double v, DType dtype) { return printExpr(floatImm(v, Type::scalar(dtype))); };
  CHECK(f(1.5, DType::F32) == "1.5f32");
  CHECK(f(1.0, DType::F64) == "1.0f64");
  CHECK(f(-0.0, DType::F32) == "-0.0f32");
  CHECK(f(static_cast<float>(0.1), DType::F32) == "0.1f32");
  CHECK(f(0.1, DType::F64) == "0.1f64");
  CHECK(f(1e20, DType::F64) == "1e+20f64");
  CHECK(f(65504, DType::F16) == "65504.0f16");
  CHECK(f(std::numeric_limits<double>::infinity(), DType::F32) == "inff32");
  CHECK(f(-std::numeric_limits<double>::infinity(), DType::F64) == "-inff64");
  CHECK(f(std::numeric_limits<double>::quiet_NaN(), DType::BF16) == "nanbf16");
  // 0.1 is not an f32: a malformed constant prints all 17 digits, unlike the f32 0.1.
  CHECK(f(0.1, DType::F32) == "0.10000000000000001f32");
  CHECK(printExpr(index(-42)) == "-42");
  CHECK(printExpr(intImm(7, Type::scalar(DType::I8))) == "7i8");
  CHECK(printExpr(intImm(-1, Type{DType::I32, 4})) == "-1i32x4");
  CHECK(printExpr(boolImm(false)) == "false");
  CHECK(printExpr(intImm(1, Type{DType::Bool, 2})) == "truex2");
  CHECK(printExpr(broadcast(floatImm(2, Type::scalar(DType::F32)), 4)) == "broadcast(2.0f32, 4)");
}

TEST_CASE("printed float constants read back as the same value", "[kernel][printer]") {
  Rng rng(7);
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3}) {
    for (int n = 0; n < 200; ++n) {
      double value = roundToDType(rng.normal() * std::pow(10.0, rng.uniform(-6, 6)), dtype);
      std::string text = printExpr(floatImm(value, Type::scalar(dtype)));
      std::string suffix(dtypeName(dtype));
      INFO(text);
      REQUIRE(text.ends_with(suffix));
      std::string number = text.substr(0, text.size() - suffix.size());
      double parsed = dtype == DType::F64 ? std::strtod(number.c_str(), nullptr)
                                          : std::strtof(number.c_str(), nullptr);
      CHECK(parsed == value);
    }
  }
}
