// End-to-end tests of the reductions (reduce_*, argmax/argmin over every axis
// set, with and without keepdims, rows and columns at every size) and of the
// pooling ops, compiled for the CPU against the reference.
#include "CompileTestUtil.h"

#include <fmt/format.h>

#include <functional>

namespace kiln::test {
namespace {

struct ReduceOp {
  std::string name;
  bool floatOnly;
  std::function<Tensor(Tensor, std::vector<int64_t>, bool)> apply;
};

const std::vector<ReduceOp> &reduceOps() {
  static const std::vector<ReduceOp> ops = {
      {"sum", false, [](Tensor x, auto axes, bool keep) { return reduceSum(x, axes, keep); }},
      {"mean", true, [](Tensor x, auto axes, bool keep) { return reduceMean(x, axes, keep); }},
      {"max", false, [](Tensor x, auto axes, bool keep) { return reduceMax(x, axes, keep); }},
      {"min", false, [](Tensor x, auto axes, bool keep) { return reduceMin(x, axes, keep); }},
      {"prod", false, [](Tensor x, auto axes, bool keep) { return reduceProd(x, axes, keep); }},
  };
  return ops;
}

/// Every non-empty axis set of a rank-3 tensor, two of them spelled with negative axes.
const std::vector<std::vector<int64_t>> kAxisSets = {{0},    {1},     {-1},     {0, 1},
                                                     {0, 2}, {-2, -1}, {0, 1, 2}};

std::string axesTag(const std::vector<int64_t> &axes) {
  return fmt::format("{}", fmt::join(axes, "_"));
}

/// Product inputs stay near 1 in magnitude (floats) or in {-2, -1, 1, 2}
/// (integers, which then wrap like the reference), so a product of 33
/// elements neither vanishes nor is always zero.
HostTensor productInput(DType dtype, const std::vector<int64_t> &shape, Rng &rng) {
  HostTensor x(dtype, shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double sign = rng.uniform() < 0.5 ? -1.0 : 1.0;
    double magnitude = isFloatingPoint(dtype) ? rng.uniform(0.8, 1.25) : 1.0 + (rng.nextU64() % 2);
    x.setDouble(i, sign * magnitude);
  }
  return x;
}

TEST_CASE("reductions over every axis set, with and without keepdims, for every dtype",
          "[compiler]") {
  std::vector<DType> types = kFloatTypes;
  types.insert(types.end(), kIntTypes.begin(), kIntTypes.end());
  DType dtype = GENERATE_COPY(from_range(types));
  INFO("dtype " << dtypeName(dtype));
  // f32 and i32 get every (op, axis set, keepdims); the others every op over
  // a rotating selection of axis sets.
  bool fullSweep = dtype == DType::F32 || dtype == DType::I32;
  CompileCase c(fmt::format("reduce_{}", dtypeName(dtype)));
  std::vector<int64_t> shape = {5, 17, 33};
  Tensor x = c.input("x", shape, dtype);
  Tensor positive = c.input("p", productInput(dtype, shape, c.rng()));
  size_t k = 0;
  for (const ReduceOp &op : reduceOps()) {
    if (op.floatOnly && !isFloatingPoint(dtype))
      continue;
    Tensor operand = op.name == "prod" ? positive : x;
    for (size_t s = 0; s < kAxisSets.size(); ++s) {
      for (bool keepdims : {false, true}) {
        bool chosen = fullSweep ? true : (s + k + (keepdims ? 1 : 0)) % 3 == 0;
        if (!chosen)
          continue;
        c.output(fmt::format("{}.{}.axes_{}{}", op.name, dtypeName(dtype), axesTag(kAxisSets[s]),
                             keepdims ? ".keepdims" : ""),
                 op.apply(operand, kAxisSets[s], keepdims));
      }
    }
    ++k;
  }
  c.check();
}

TEST_CASE("row and column reductions at every odd and round size", "[compiler]") {
  CompileCase c("reduce_sizes");
  for (int64_t n : allSizes()) {
    Tensor rows = c.input(fmt::format("rows{}", n), {3, n});
    Tensor columns = c.input(fmt::format("columns{}", n), {n, 5});
    // The whole row in one kernel (axis 1), the column sum across rows (axis 0).
    c.output(fmt::format("row_sum.3x{}", n), reduceSum(rows, {1}));
    c.output(fmt::format("row_max.3x{}", n), reduceMax(rows, {-1}, true));
    c.output(fmt::format("column_sum.{}x5", n), reduceSum(columns, {0}));
    c.output(fmt::format("column_min.{}x5", n), reduceMin(columns, {0}, true));
  }
  Tensor all = c.input("all", {1024});
  c.output("full_mean.1024", reduceMean(all, {0}));
  Tensor one = c.input("one", {1, 1});
  c.output("sum_of_one", reduceSum(one, {0, 1}));
  c.check();
}

TEST_CASE("argmax and argmin find the first extreme along every axis", "[compiler]") {
  std::vector<DType> types = kFloatTypes;
  types.insert(types.end(), kIntTypes.begin(), kIntTypes.end());
  DType dtype = GENERATE_COPY(from_range(types));
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("argreduce_{}", dtypeName(dtype)));
  // Integers in [-8, 8] and f8 values repeat often: ties must resolve to the
  // first index, as the reference does.
  Tensor x = c.input("x", {7, 33, 5}, dtype);
  for (int64_t axis : {0, 1, 2, -1}) {
    bool keepdims = axis != 1;
    c.output(fmt::format("argmax.axis{}{}", axis, keepdims ? ".keepdims" : ""),
             argmax(x, axis, keepdims));
    c.output(fmt::format("argmin.axis{}{}", axis, keepdims ? "" : ".keepdims"),
             argmin(x, axis, !keepdims));
  }
  Tensor row = c.input("row", {2, 257}, dtype);
  c.output("argmax.row257", argmax(row, 1));
  c.check();
}

TEST_CASE("reductions of NaN and infinities follow the reference", "[compiler]") {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  CompileCase c("reduce_special");
  // Row 0 has a NaN late, row 1 +inf and -inf, row 2 only -inf, row 3 a NaN first.
  std::vector<double> values = {1,    2,    3,     4,    5,    6,    kNaN, 8,    9,
                                kInf, 1,    -kInf, 2,    3,    4,    5,    6,    7,
                                -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,
                                kNaN, 1,    2,     3,    4,    5,    6,    7,    8};
  Tensor x = c.input("x", HostTensor::fromDoubles(DType::F32, {4, 9}, values));
  c.output("max", reduceMax(x, {1}));
  c.output("min", reduceMin(x, {1}));
  c.output("sum", reduceSum(x, {1}));
  c.output("argmax", argmax(x, 1));
  c.output("argmin", argmin(x, 1));
  c.check();
}

// ---- pooling

struct PoolCase {
  std::string name;
  std::vector<int64_t> nchw; ///< input shape as [N, C, H, W]
  Pool2DOptions options;
};

std::vector<PoolCase> poolCases() {
  std::vector<PoolCase> cases;
  auto add = [&](std::string name, std::vector<int64_t> shape, std::array<int64_t, 2> kernel,
                 std::array<int64_t, 2> stride, Padding padding, bool countIncludePad) {
    Pool2DOptions options;
    options.kernel = kernel;
    options.stride = stride;
    options.padding = padding;
    options.countIncludePad = countIncludePad;
    cases.push_back({std::move(name), std::move(shape), options});
  };
  add("k2s2", {2, 3, 28, 28}, {2, 2}, {2, 2}, Padding::valid(), false);
  add("k2s2_odd", {1, 5, 17, 9}, {2, 2}, {2, 2}, Padding::valid(), false);
  add("k3s1_same", {2, 4, 13, 11}, {3, 3}, {1, 1}, Padding::same(), false);
  add("k3s2_pad", {1, 3, 15, 15}, {3, 3}, {2, 2}, Padding::symmetric(1, 1), false);
  add("k3s2_pad_incl", {1, 3, 15, 15}, {3, 3}, {2, 2}, Padding::symmetric(1, 1), true);
  add("k3x2_asym", {2, 2, 9, 7}, {3, 2}, {2, 1}, Padding::explicitPads(1, 0, 0, 1), true);
  add("k1s1", {1, 7, 5, 5}, {1, 1}, {1, 1}, Padding::valid(), false);
  add("whole", {3, 2, 6, 6}, {6, 6}, {1, 1}, Padding::valid(), false);
  return cases;
}

std::vector<int64_t> toLayout(const std::vector<int64_t> &nchw, Layout layout) {
  if (layout == Layout::NCHW)
    return nchw;
  return {nchw[0], nchw[2], nchw[3], nchw[1]};
}

TEST_CASE("max and avg pooling in both layouts with padding, strides and count_include_pad",
          "[compiler]") {
  DType dtype = GENERATE(DType::F32, DType::F16, DType::BF16, DType::F64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("pool_{}", dtypeName(dtype)));
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (const PoolCase &pool : poolCases()) {
      Pool2DOptions options = pool.options;
      options.layout = layout;
      std::string name = fmt::format("{}.{}", pool.name, layoutName(layout));
      Tensor x = c.input("x." + name, toLayout(pool.nchw, layout), dtype);
      c.output("max_pool." + name, maxPool2d(x, options));
      c.output("avg_pool." + name, avgPool2d(x, options));
    }
    Tensor x = c.input(fmt::format("g.{}", layoutName(layout)), toLayout({2, 19, 7, 9}, layout),
                       dtype);
    c.output(fmt::format("global_avg_pool.{}", layoutName(layout)), globalAvgPool(x, layout));
  }
  c.check();
}

TEST_CASE("max pooling of integers", "[compiler]") {
  DType dtype = GENERATE(DType::I8, DType::I32, DType::I64);
  INFO("dtype " << dtypeName(dtype));
  CompileCase c(fmt::format("pool_{}", dtypeName(dtype)));
  Pool2DOptions options;
  options.kernel = {3, 3};
  options.stride = {2, 2};
  options.padding = Padding::symmetric(1, 1);
  Tensor x = c.input("x", {2, 3, 11, 13}, dtype);
  c.output("max_pool.nchw", maxPool2d(x, options));
  options.layout = Layout::NHWC;
  Tensor y = c.input("y", {2, 11, 13, 3}, dtype);
  c.output("max_pool.nhwc", maxPool2d(y, options));
  c.check();
}

} // namespace
} // namespace kiln::test
