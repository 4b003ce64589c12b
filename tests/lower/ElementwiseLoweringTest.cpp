// Pointwise groups of elementwise ops against the reference, on every target (LoweringTestUtil.h):
// every unary and binary op on every dtype it takes, broadcasting, NaN propagation, integer
// wrapping and division, casts, clamp, where and batch_norm.
#include "LoweringTestUtil.h"

namespace kiln::test {
namespace {

using ir::OpKind;

/// Inputs in the op's domain (positive for log, sqrt, rsqrt).
std::pair<double, double> domainOf(OpKind kind) {
  switch (kind) {
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt: return {0.05, 4.0};
  case OpKind::Exp: return {-4.0, 4.0};
  default: return {-3.0, 3.0};
  }
}

TEST_CASE("lowered unary float ops match the reference on every float dtype", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  const OpKind ops[] = {OpKind::Neg,  OpKind::Abs,     OpKind::Exp,  OpKind::Log,  OpKind::Sqrt,
                        OpKind::Rsqrt, OpKind::Tanh,   OpKind::Sigmoid, OpKind::Relu, OpKind::Silu,
                        OpKind::Erf,  OpKind::Sin,     OpKind::Cos};
  for (DType dtype : kFloatTypes) {
    for (OpKind kind : ops) {
      INFO(ir::opName(kind) << " on " << dtypeName(dtype));
      LoweringCase c(static_cast<uint64_t>(kind) * 31 + static_cast<uint64_t>(dtype));
      auto [low, high] = domainOf(kind);
      ir::Value *x = c.input("x", dtype, {7, 17}, low, high);
      c.output(c.node(kind, {x}));
      c.check();
    }
  }
}

TEST_CASE("lowered gelu matches both reference forms", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::F64, DType::F32, DType::BF16}) {
    for (const char *form : {"none", "tanh"}) {
      INFO(form << " on " << dtypeName(dtype));
      LoweringCase c(3);
      ir::Value *x = c.input("x", dtype, {127}, -5.0, 5.0);
      c.output(c.node(OpKind::Gelu, {x}, {{"approximate", std::string(form)}}));
      c.check();
    }
  }
}

TEST_CASE("lowered binary ops broadcast like NumPy on every dtype", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min};
  std::vector<DType> dtypes = kFloatTypes;
  dtypes.insert(dtypes.end(), kIntTypes.begin(), kIntTypes.end());
  for (DType dtype : dtypes) {
    for (OpKind kind : ops) {
      INFO(ir::opName(kind) << " on " << dtypeName(dtype));
      LoweringCase c(11);
      bool isInt = isInteger(dtype);
      // Integers over a range wide enough to wrap i8 and i32 products.
      double range = dtype == DType::I8 ? 128.0 : isInt ? 1e5 : 3.0;
      ir::Value *a = c.input("a", dtype, {3, 1, 5}, -range, range);
      ir::Value *b = c.input("b", dtype, {4, 5}, -range, range);
      c.output(c.node(kind, {a, b}));
      c.check();
    }
  }
}

TEST_CASE("lowered pow matches the reference", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::F64, DType::F32, DType::F16}) {
    LoweringCase c(5);
    ir::Value *a = c.input("a", dtype, {33}, 0.1, 3.0);
    ir::Value *b = c.input("b", dtype, {1}, -2.0, 2.0);
    c.output(c.node(OpKind::Pow, {a, b}));
    c.check();
  }
}

TEST_CASE("lowered integer arithmetic wraps and divides like the reference", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c;
  ir::Value *a = c.input("a", DType::I8, {8}, {127, -128, -128, 7, -7, 100, 0, 5});
  ir::Value *b = c.input("b", DType::I8, {8}, {1, -1, 0, 2, 2, 100, 0, -3});
  c.output(c.node(OpKind::Add, {a, b}));
  c.output(c.node(OpKind::Sub, {a, b}));
  c.output(c.node(OpKind::Mul, {a, b}));
  c.output(c.node(OpKind::Div, {a, b}));
  c.output(c.node(OpKind::Neg, {a}));
  c.output(c.node(OpKind::Abs, {a}));
  c.output(c.node(OpKind::Relu, {a}));
  NamedTensors want = c.reference();
  // Hand-computed: 127 + 1 wraps to -128; -128 / -1 wraps to -128; x / 0 is 0; -7 / 2 truncates.
  CHECK(want.at("out0").getDouble(0) == -128);
  CHECK(want.at("out3").getDouble(1) == -128);
  CHECK(want.at("out3").getDouble(2) == 0);
  CHECK(want.at("out3").getDouble(4) == -3);
  CHECK(want.at("out4").getDouble(1) == -128);
  c.check();
}

TEST_CASE("lowered max, min, relu and clamp propagate NaN", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::F32, DType::F16, DType::F64}) {
    LoweringCase c;
    ir::Value *a = c.input("a", dtype, {6}, {kNaN, 1.0, kNaN, -0.0, kInf, -kInf});
    ir::Value *b = c.input("b", dtype, {6}, {1.0, kNaN, kNaN, 0.0, 2.0, -1.0});
    ir::Value *mx = c.node(OpKind::Max, {a, b});
    ir::Value *mn = c.node(OpKind::Min, {a, b});
    c.output(mx);
    c.output(mn);
    c.output(c.node(OpKind::Relu, {a}));
    c.output(c.node(OpKind::Clamp, {a}, {{"min", -0.5}, {"max", 0.5}}));
    NamedTensors want = c.reference();
    CHECK(std::isnan(want.at("out0").getDouble(0)));
    CHECK(std::isnan(want.at("out1").getDouble(1)));
    CHECK(std::isnan(want.at("out3").getDouble(0)));
    CHECK(want.at("out3").getDouble(4) == 0.5);
    c.check();
  }
}

TEST_CASE("lowered clamp rounds its bounds like the reference on ints and floats", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::I8, DType::I32, DType::I64, DType::F32, DType::BF16, DType::F8E4M3}) {
    INFO(dtypeName(dtype));
    LoweringCase c(9);
    double range = dtype == DType::I8 ? 128 : 20;
    ir::Value *x = c.input("x", dtype, {65}, -range, range);
    c.output(c.node(OpKind::Clamp, {x}, {{"min", -7.5}, {"max", 3.25}}));
    c.output(c.node(OpKind::Clamp, {x}, {{"min", -1e30}, {"max", 1e30}}));
    c.output(c.node(OpKind::Clamp, {x}, {{"min", 0.1}, {"max", 0.2}}));
    c.check();
  }
}

TEST_CASE("lowered comparisons, logic and where", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  const OpKind compares[] = {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge};
  for (DType dtype : {DType::F32, DType::BF16, DType::I32, DType::I8, DType::Bool}) {
    INFO(dtypeName(dtype));
    LoweringCase c(13);
    // Narrow ranges so equal pairs occur.
    ir::Value *a = c.input("a", dtype, {5, 7}, -2, 2);
    ir::Value *b = c.input("b", dtype, {7}, -2, 2);
    for (OpKind kind : compares)
      c.output(c.node(kind, {a, b}));
    c.check();
  }
  LoweringCase c(17);
  ir::Value *p = c.input("p", DType::Bool, {3, 1}, -1, 1);
  ir::Value *q = c.input("q", DType::Bool, {4}, -1, 1);
  c.output(c.node(OpKind::And, {p, q}));
  c.output(c.node(OpKind::Or, {p, q}));
  c.output(c.node(OpKind::Not, {q}));
  for (DType dtype : {DType::F16, DType::I64, DType::Bool}) {
    ir::Value *x = c.input(fmt::format("x{}", dtypeName(dtype)), dtype, {1, 4}, -3, 3);
    ir::Value *y = c.input(fmt::format("y{}", dtypeName(dtype)), dtype, {3, 4}, -3, 3);
    c.output(c.node(OpKind::Where, {p, x, y}));
  }
  c.check();
}

TEST_CASE("lowered casts follow the graph's conversion rules", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  const DType all[] = {DType::F64, DType::F32,    DType::F16, DType::BF16, DType::F8E4M3,
                       DType::F8E5M2, DType::I64, DType::I32, DType::I8,  DType::Bool};
  for (DType from : all) {
    LoweringCase c(19);
    // Wide values: saturation to i8/f8, wrapping of wide ints, NaN and inf.
    std::vector<double> values{0.0, -0.0, 1.5, -2.5, 300.7, -70000.9, 1e10, -3e9, 127.0, -129.0};
    if (isFloatingPoint(from)) {
      values.push_back(kNaN);
      values.push_back(kInf);
      values.push_back(-kInf);
    }
    int64_t n = static_cast<int64_t>(values.size());
    ir::Value *x = c.input("x", from, {n}, values);
    // The reference holds i64 in fp64 and saturates at 2^63 - 1024 (support/DType.h), where
    // a kernel gives INT64_MAX: casts to i64 take no value at or past 2^63.
    std::vector<double> inRange;
    for (double v : values)
      inRange.push_back(roundToDType(v, from) >= 0x1p63 ? 42.0 : v);
    ir::Value *xi = c.input("xi", from, {n}, inRange);
    for (DType to : all) {
      INFO(dtypeName(from) << " -> " << dtypeName(to));
      c.output(c.node(OpKind::Cast, {to == DType::I64 ? xi : x}, {{"dtype", to}}));
    }
    c.check();
  }
}

TEST_CASE("lowered batch_norm normalizes along its channel axis", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (int64_t axis : {1, -1}) {
    for (DType dtype : {DType::F32, DType::F16}) {
      LoweringCase c(23);
      std::vector<int64_t> shape{2, 5, 3, 7};
      int64_t channels = shape[axis < 0 ? 3 : 1];
      ir::Value *x = c.input("x", dtype, shape);
      ir::Value *scale = c.input("scale", dtype, {channels});
      ir::Value *bias = c.input("bias", dtype, {channels});
      ir::Value *mean = c.input("mean", dtype, {channels});
      ir::Value *var = c.input("var", dtype, {channels}, 0.5, 2.0);
      c.output(c.node(OpKind::BatchNorm, {x, scale, bias, mean, var},
                      {{"axis", axis}, {"epsilon", 1e-3}}));
      c.check();
    }
  }
}

TEST_CASE("lowered elementwise chains fuse into one kernel and stay exact", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(29);
  ir::Value *x = c.input("x", DType::F32, {17, 33});
  ir::Value *bias = c.input("bias", DType::F32, {33});
  ir::Value *sum = c.node(OpKind::Add, {x, bias});
  ir::Value *act = c.node(OpKind::Mul, {sum, c.node(OpKind::Sigmoid, {sum})});
  // x*x reused: the element emitter must share, not duplicate, the subtree.
  ir::Value *sq = c.node(OpKind::Mul, {act, act});
  ir::Value *sq2 = c.node(OpKind::Mul, {sq, sq});
  ir::Value *sq3 = c.node(OpKind::Mul, {sq2, sq2});
  c.output(c.node(OpKind::Tanh, {sq3}));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  CHECK(plan->groups[0].kind == passes::GroupKind::Pointwise);
  c.check();
}

TEST_CASE("lowered broadcasts over leading axes read whole vectors", "[lower][elementwise]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::F32, DType::F16, DType::I8, DType::F64}) {
    for (int64_t width : {8, 16, 24}) {
      INFO(dtypeName(dtype) << " rows of " << width);
      LoweringCase c(static_cast<uint64_t>(width) + 70);
      double range = dtype == DType::I8 ? 100 : 3;
      ir::Value *a = c.input("a", dtype, {3, 1, width}, -range, range);
      ir::Value *b = c.input("b", dtype, {5, width}, -range, range);
      ir::Value *d = c.input("d", dtype, {width}, -range, range);
      ir::Value *e = c.input("e", dtype, {3, 5, width}, -range, range);
      ir::Value *sum = c.node(OpKind::Add, {c.node(OpKind::Mul, {a, b}), d});
      c.output(c.node(OpKind::Sub, {c.node(OpKind::Max, {sum, e}), c.node(OpKind::Neg, {d})}));
      c.check();
    }
  }
}

} // namespace
} // namespace kiln::test
