// End-to-end tests of every elementwise op (unary, binary with broadcasting,
// where, cast) compiled for the CPU against the reference, for every dtype
// each op accepts, at odd and round sizes. One graph per dtype, one output per
// (op, shape), so a failure names the op, the dtype and the shape.
#include "CompileTestUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace kiln::test {
namespace {

struct UnaryOp {
  std::string name;
  bool floatOnly;
  Values values;
  std::function<Tensor(Tensor)> apply;
};

const std::vector<UnaryOp> &unaryOps() {
  static const std::vector<UnaryOp> ops = {
      {"neg", false, {}, [](Tensor x) { return neg(x); }},
      {"abs", false, {}, [](Tensor x) { return abs(x); }},
      {"relu", false, {}, [](Tensor x) { return relu(x); }},
      {"clamp", false, {}, [](Tensor x) { return clamp(x, -0.75, 1.5); }},
      {"clamp_wide", false, {}, [](Tensor x) { return clamp(x, -3.0, 5.0); }},
      {"exp", true, {}, [](Tensor x) { return exp(x); }},
      {"log", true, Values::positive(), [](Tensor x) { return log(x); }},
      {"sqrt", true, Values::positive(), [](Tensor x) { return sqrt(x); }},
      {"rsqrt", true, Values::positive(), [](Tensor x) { return rsqrt(x); }},
      {"tanh", true, {}, [](Tensor x) { return tanh(x); }},
      {"sigmoid", true, {}, [](Tensor x) { return sigmoid(x); }},
      {"gelu", true, {}, [](Tensor x) { return gelu(x); }},
      {"gelu_tanh", true, {}, [](Tensor x) { return gelu(x, GeluApproximation::Tanh); }},
      {"silu", true, {}, [](Tensor x) { return silu(x); }},
      {"erf", true, {}, [](Tensor x) { return erf(x); }},
      {"sin", true, Values::uniform(-10, 10), [](Tensor x) { return sin(x); }},
      {"cos", true, Values::uniform(-10, 10), [](Tensor x) { return cos(x); }},
  };
  return ops;
}

struct BinaryOp {
  std::string name;
  bool floatOnly;
  Values lhsValues;
  std::function<Tensor(Tensor, Tensor)> apply;
};

const std::vector<BinaryOp> &binaryOps() {
  static const std::vector<BinaryOp> ops = {
      {"add", false, {}, [](Tensor a, Tensor b) { return add(a, b); }},
      {"sub", false, {}, [](Tensor a, Tensor b) { return sub(a, b); }},
      {"mul", false, {}, [](Tensor a, Tensor b) { return mul(a, b); }},
      {"div", false, {}, [](Tensor a, Tensor b) { return div(a, b); }},
      {"max", false, {}, [](Tensor a, Tensor b) { return maximum(a, b); }},
      {"min", false, {}, [](Tensor a, Tensor b) { return minimum(a, b); }},
      {"pow", true, Values::positive(), [](Tensor a, Tensor b) { return pow(a, b); }},
      {"eq", false, {}, [](Tensor a, Tensor b) { return eq(a, b); }},
      {"ne", false, {}, [](Tensor a, Tensor b) { return ne(a, b); }},
      {"lt", false, {}, [](Tensor a, Tensor b) { return lt(a, b); }},
      {"le", false, {}, [](Tensor a, Tensor b) { return le(a, b); }},
      {"gt", false, {}, [](Tensor a, Tensor b) { return gt(a, b); }},
      {"ge", false, {}, [](Tensor a, Tensor b) { return ge(a, b); }},
  };
  return ops;
}

using ShapePair = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

/// Operand shapes that broadcast in every way NumPy allows: equal shapes, a
/// scalar on either side, a trailing vector, size-1 axes on both sides, rank
/// extension.
std::vector<ShapePair> broadcastPairs(int64_t n) {
  return {
      {{n}, {n}},
      {{n}, {}},
      {{}, {n}},
      {{3, n}, {n}},
      {{n, 1}, {1, 5}},
      {{2, 1, n}, {3, 1}},
      {{1}, {n}},
      {{4, n}, {4, 1}},
  };
}

std::string tag(DType dtype) { return std::string(dtypeName(dtype)); }

/// The dtype's position in allDTypes(), so that each dtype rotates through
/// different sizes and every (op, size) pair is covered across dtypes.
size_t dtypeIndex(DType dtype) {
  auto types = allDTypes();
  return static_cast<size_t>(std::find(types.begin(), types.end(), dtype) - types.begin());
}

TEST_CASE("every unary elementwise op matches the reference for every dtype", "[compiler]") {
  std::vector<DType> types = kFloatTypes;
  types.insert(types.end(), kIntTypes.begin(), kIntTypes.end());
  DType dtype = GENERATE_COPY(from_range(types));
  INFO("dtype " << dtypeName(dtype));
  auto sizes = allSizes();
  CompileCase c(fmt::format("unary_{}", tag(dtype)));
  size_t rotation = 3 * dtypeIndex(dtype);
  size_t k = 0;
  for (const UnaryOp &op : unaryOps()) {
    if (op.floatOnly && !isFloatingPoint(dtype))
      continue;
    // One flat shape and one 2-D shape with an odd inner axis per op; the
    // sizes rotate with the op and the dtype.
    int64_t n = sizes[(k + rotation) % sizes.size()];
    int64_t m = sizes[(k + rotation + 5) % sizes.size()];
    std::vector<std::vector<int64_t>> shapes = {{n}, {m, 7}};
    if ((k + rotation) % 3 == 0)
      shapes.push_back({}); // a rank-0 tensor for every third op
    ++k;
    for (const std::vector<int64_t> &shape : shapes) {
      std::string name = fmt::format("{}.{}.{}", op.name, tag(dtype), shapeTag(shape));
      Tensor x = c.input("x." + name, shape, dtype, op.values);
      c.output(name, op.apply(x));
    }
  }
  c.check();
}

TEST_CASE("every binary elementwise op broadcasts and matches the reference for every dtype",
          "[compiler]") {
  DType dtype = GENERATE_COPY(from_range(allDTypes()));
  INFO("dtype " << dtypeName(dtype));
  auto sizes = allSizes();
  CompileCase c(fmt::format("binary_{}", tag(dtype)));
  size_t rotation = dtypeIndex(dtype);
  size_t k = 0;
  for (const BinaryOp &op : binaryOps()) {
    bool arithmetic = op.name != "eq" && op.name != "ne" && op.name != "lt" && op.name != "le" &&
                      op.name != "gt" && op.name != "ge";
    if ((op.floatOnly && !isFloatingPoint(dtype)) || (dtype == DType::Bool && arithmetic))
      continue;
    for (int variant = 0; variant < 2; ++variant) {
      size_t sizeIndex = k * 2 + variant + rotation;
      size_t pairIndex = k + rotation + variant * 4;
      int64_t n = sizes[sizeIndex % sizes.size()];
      auto pairs = broadcastPairs(n);
      const ShapePair &pair = pairs[pairIndex % pairs.size()];
      std::string name = fmt::format("{}.{}.{}.{}", op.name, tag(dtype), shapeTag(pair.first),
                                     shapeTag(pair.second));
      Tensor a = c.input("a." + name, pair.first, dtype, op.lhsValues);
      Tensor b = c.input("b." + name, pair.second, dtype);
      c.output(name, op.apply(a, b));
    }
    ++k;
  }
  if (dtype == DType::Bool) {
    for (const auto &[name, apply] :
         std::vector<std::pair<std::string, std::function<Tensor(Tensor, Tensor)>>>{
             {"and", [](Tensor a, Tensor b) { return logicalAnd(a, b); }},
             {"or", [](Tensor a, Tensor b) { return logicalOr(a, b); }}}) {
      Tensor a = c.input("a." + name, {17, 1}, dtype);
      Tensor b = c.input("b." + name, {33}, dtype);
      c.output(name + ".17x1.33", apply(a, b));
      Tensor d = c.input("d." + name, {65}, dtype);
      c.output(name + ".65.scalar", apply(d, c.input("e." + name, {}, dtype)));
    }
    Tensor x = c.input("x.not", {127}, dtype);
    c.output("not.127", logicalNot(x));
    c.output("not.not.3x7", logicalNot(logicalNot(c.input("y.not", {3, 7}, dtype))));
  }
  // where(cond, a, b): all three broadcast.
  int64_t n = sizes[(rotation + 4) % sizes.size()];
  Tensor cond = c.input("where.cond", {n, 1}, DType::Bool);
  Tensor a = c.input("where.a", {n, 5}, dtype);
  Tensor b = c.input("where.b", {5}, dtype);
  c.output(fmt::format("where.{}.{}x5", tag(dtype), n), where(cond, a, b));
  Tensor cond2 = c.input("where.cond2", {3, 33}, DType::Bool);
  c.output(fmt::format("where.{}.scalar_branch", tag(dtype)),
           where(cond2, c.input("where.a2", {}, dtype), c.input("where.b2", {33}, dtype)));
  c.check();
}

TEST_CASE("add broadcasts every shape pair at every odd and round size", "[compiler]") {
  CompileCase c("add_sweep");
  for (int64_t n : allSizes()) {
    auto pairs = broadcastPairs(n);
    for (size_t p = 0; p < pairs.size(); ++p) {
      // Alternate add and mul so both get the full sweep without doubling it.
      std::string op = p % 2 == 0 ? "add" : "mul";
      std::string name = fmt::format("{}.pair{}.{}.{}", op, p, shapeTag(pairs[p].first),
                                     shapeTag(pairs[p].second));
      Tensor a = c.input("a." + name, pairs[p].first);
      Tensor b = c.input("b." + name, pairs[p].second);
      c.output(name, p % 2 == 0 ? a + b : a * b);
    }
  }
  c.check();
}

TEST_CASE("integer arithmetic wraps and divides as the reference does", "[compiler]") {
  // Full-range values: i8 sums and products overflow and wrap, division by 0
  // gives 0 and INT_MIN / -1 wraps (x86 would trap on a plain idiv).
  DType dtype = GENERATE(DType::I8, DType::I32, DType::I64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("int_wrap_{}", tag(dtype)));
  double low = dtype == DType::I8 ? -128 : dtype == DType::I32 ? -2147483648.0 : -1e18;
  double high = dtype == DType::I8 ? 128 : dtype == DType::I32 ? 2147483648.0 : 1e18;
  HostTensor a = randomTensor(dtype, {67}, c.rng(), Values::uniform(low, high));
  HostTensor b = randomTensor(dtype, {67}, c.rng(), Values::uniform(low, high));
  // Edge pairs first: x / 0, min / -1, min * -1, -min, |min|.
  double minValue = dtype == DType::I8 ? -128 : dtype == DType::I32 ? -2147483648.0
                                                                   : -9223372036854775808.0;
  std::vector<std::pair<double, double>> edges = {
      {7, 0}, {-7, 0}, {minValue, -1}, {minValue, 1}, {-9, 2}, {9, -2}, {minValue, minValue}};
  for (size_t i = 0; i < edges.size(); ++i) {
    a.setDouble(static_cast<int64_t>(i), edges[i].first);
    b.setDouble(static_cast<int64_t>(i), edges[i].second);
  }
  Tensor x = c.input("a", a), y = c.input("b", b);
  // The reference holds values in fp64, so it cannot wrap an i64 sum past
  // 2^63 (-2^63 - 1 rounds to -2^63 before wrapping): i64 sums and
  // differences skip the INT_MIN edge pairs.
  if (dtype == DType::I64) {
    HostTensor a2 = a, b2 = b;
    for (int64_t i : {2, 3, 6}) {
      a2.setDouble(i, 12345);
      b2.setDouble(i, -678);
    }
    Tensor x2 = c.input("a2", a2), y2 = c.input("b2", b2);
    c.output("add", x2 + y2);
    c.output("sub", x2 - y2);
  } else {
    c.output("add", x + y);
    c.output("sub", x - y);
  }
  c.output("mul", x * y);
  c.output("div", x / y);
  c.output("neg", -x);
  c.output("abs", abs(x));
  c.output("max", maximum(x, y));
  c.output("lt", x < y);
  c.check();
}

TEST_CASE("float ops propagate NaN and infinities as the reference does", "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::F64);
  INFO("dtype " << dtypeName(dtype));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  CompileCase c(fmt::format("special_{}", tag(dtype)));
  std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -2.5, 3.0, kNaN, 0.5, -kInf};
  std::vector<double> others = {1.0, kNaN, 2.0, kInf, -0.0, kInf, kNaN, -kInf, 0.0, 0.0, -1.0};
  int64_t n = static_cast<int64_t>(specials.size());
  Tensor x = c.input("x", HostTensor::fromDoubles(dtype, {n}, specials));
  Tensor y = c.input("y", HostTensor::fromDoubles(dtype, {n}, others));
  c.output("max", maximum(x, y));
  c.output("min", minimum(x, y));
  c.output("relu", relu(x));
  c.output("clamp", clamp(x, -1.0, 1.0));
  c.output("div", x / y);
  c.output("exp", exp(x));
  c.output("tanh", tanh(x));
  c.output("sigmoid", sigmoid(x));
  c.output("eq", eq(x, y));
  c.output("ne", ne(x, y));
  c.output("lt", x < y);
  c.output("ge", x >= y);
  c.output("abs", abs(x));
  c.check();
}

TEST_CASE("cast converts between every pair of dtypes", "[compiler]") {
  DType source = GENERATE_COPY(from_range(allDTypes()));
  INFO("source dtype " << dtypeName(source));
  CompileCase c(fmt::format("cast_from_{}", tag(source)));
  // Wide values with fractions: float -> int truncates and saturates, int ->
  // int wraps, wide values overflow f16 and saturate f8. Special values lead.
  HostTensor x = randomTensor(source, {3, 67}, c.rng(),
                              source == DType::Bool ? Values::normal()
                                                    : Values::uniform(-300, 300));
  if (isFloatingPoint(source)) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<double> specials = {std::numeric_limits<double>::quiet_NaN(),
                                    kInf,
                                    -kInf,
                                    -0.0,
                                    0.5,
                                    -0.5,
                                    -1.75,
                                    1e10,
                                    -1e10,
                                    127.5,
                                    -128.75,
                                    255.0,
                                    70000.0,
                                    1e-6};
    for (size_t i = 0; i < specials.size(); ++i)
      x.setDouble(static_cast<int64_t>(i), specials[i]);
  } else if (source == DType::I64 || source == DType::I32) {
    std::vector<double> specials = {2147483647.0, -2147483648.0, 70000.0, -70000.0, 128, -129,
                                    16777217.0};
    for (size_t i = 0; i < specials.size(); ++i)
      x.setDouble(static_cast<int64_t>(i), specials[i]);
  }
  Tensor in = c.input("x", x);
  // The reference saturates float -> i64 at 2^63 - 1024 (the largest fp64
  // below 2^63), not INT64_MAX: the i64 casts read values that stay below
  // that; the next test checks the saturation itself.
  HostTensor belowI64Max = x;
  for (int64_t i = 0; i < belowI64Max.numElements(); ++i)
    if (isFloatingPoint(source) && belowI64Max.getDouble(i) > 9.2e18)
      belowI64Max.setDouble(i, 1000.0); // representable in every float dtype
  Tensor forI64 = c.input("x_for_i64", belowI64Max);
  for (DType target : allDTypes())
    c.output(fmt::format("cast.{}.to.{}", tag(source), tag(target)),
             cast(target == DType::I64 ? forI64 : in, target));
  // A cast in the middle of a fused chain, and a round trip through the narrow type.
  if (isFloatingPoint(source)) {
    c.output("cast_chain", cast(cast(in * 0.5, DType::F16), source) + 1.0);
  }
  c.check();
}

TEST_CASE("float to integer casts saturate at the integer limits and send NaN to 0",
          "[compiler]") {
  // Expected values by hand: the reference's i64 limit is 2^63 - 1024 (see
  // DType.h), so this checks the compiled bits directly.
  DType source = GENERATE(DType::F64, DType::F32, DType::F16);
  INFO("source dtype " << dtypeName(source));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                                -2.75, 2.75, 300.0, -300.0, 60000.0};
  if (source != DType::F16) {
    values.push_back(1e19);
    values.push_back(-1e19);
    values.push_back(3e9);
  }
  CompileCase c(fmt::format("saturate_{}", tag(source)));
  int64_t n = static_cast<int64_t>(values.size());
  Tensor x = c.input("x", HostTensor::fromDoubles(source, {n}, values));
  c.output("i64", cast(x, DType::I64));
  c.output("i32", cast(x, DType::I32));
  c.output("i8", cast(x, DType::I8));
  REQUIRE(c.graph().finalize());
  CompiledModel compiled = compileOrFail(c.graph().ir());
  auto out = compiled.run(c.tensors(), {.poisonBuffers = true});
  REQUIRE(out);
  auto expectAll = [&](const char *name, auto limits, auto got) {
    using T = decltype(limits);
    for (int64_t i = 0; i < n; ++i) {
      double v = values[static_cast<size_t>(i)];
      T want = std::isnan(v) ? T(0)
               : v >= static_cast<double>(std::numeric_limits<T>::max())
                   ? std::numeric_limits<T>::max()
               : v <= static_cast<double>(std::numeric_limits<T>::min())
                   ? std::numeric_limits<T>::min()
                   : static_cast<T>(std::trunc(v));
      INFO(name << " element " << i << " from " << v);
      CHECK(static_cast<int64_t>(got[static_cast<size_t>(i)]) == static_cast<int64_t>(want));
    }
  };
  expectAll("i64", int64_t{}, out->at("i64").as<int64_t>());
  expectAll("i32", int32_t{}, out->at("i32").as<int32_t>());
  expectAll("i8", int8_t{}, out->at("i8").as<int8_t>());
}

// A flat pointwise kernel once put its index on the last axis, which operands of
// size 1 there read at 0 (as a broadcast): exp of an f32[4,1] gave exp(a[0]) four times.
TEST_CASE("pointwise kernels whose output ends in a size-1 axis", "[compiler]") {
  CompileCase c("trailing_unit_axis");
  c.output("exp.4x1", exp(c.input("a", {4, 1})));
  Tensor x = c.input("x", {4, 1}), y = c.input("y", {4, 1});
  c.output("add.4x1.4x1", x + y);
  c.output("le.4x1.4x1", x <= y);
  c.output("add.3x1.1", c.input("p", {3, 1}) + c.input("q", {1}));
  c.output("mul.4x1x1.scalar", c.input("r", {4, 1, 1}) * 2.0);
  c.output("cast.17x1", cast(c.input("s", {17, 1}), DType::F16));
  c.check();
}

} // namespace
} // namespace kiln::test
