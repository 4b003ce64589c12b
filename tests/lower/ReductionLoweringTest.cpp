// Reduction groups against the reference, on every target (LoweringTestUtil.h): every reduce op and
// arg reduction, inner and outer axis sets, keepdims, negative axes, odd sizes around the partial-
// accumulator width, every dtype, NaN and ties, prologue and epilogue.
#include "LoweringTestUtil.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

ir::AttrMap reduceAttrs(Ints axes, bool keepDims) {
  return {{"axes", std::move(axes)}, {"keepdims", keepDims}};
}

TEST_CASE("lowered reductions over any axis set with and without keepdims", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  const OpKind ops[] = {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                        OpKind::ReduceProd};
  const Ints axisSets[] = {{-1}, {0}, {1}, {0, 2}, {1, 2}, {0, 1, 2}, {2, 0}};
  for (OpKind kind : ops) {
    for (const Ints &axes : axisSets) {
      for (bool keepDims : {false, true}) {
        INFO(ir::opName(kind) << " axes " << ir::shapeStr(axes) << " keepdims " << keepDims);
        LoweringCase c(static_cast<uint64_t>(kind));
        // Products of many terms stay finite near 1.
        bool product = kind == OpKind::ReduceProd;
        ir::Value *x = c.input("x", DType::F32, {5, 7, 33}, product ? 0.9 : -2.0, product ? 1.1 : 2.0);
        c.output(c.node(kind, {x}, reduceAttrs(axes, keepDims)));
        c.check();
      }
    }
  }
}

TEST_CASE("lowered sums at odd and round sizes around the vector width", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (int64_t n : {1, 3, 7, 16, 17, 33, 64, 65, 127, 1000}) {
    for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3}) {
      INFO(n << " elements of " << dtypeName(dtype));
      LoweringCase c(static_cast<uint64_t>(n));
      ir::Value *x = c.input("x", dtype, {3, n});
      c.output(c.node(OpKind::ReduceSum, {x}, reduceAttrs({1}, false)));
      c.output(c.node(OpKind::ReduceMax, {x}, reduceAttrs({1}, true)));
      ir::Value *y = c.input("y", dtype, {n, 5});
      c.output(c.node(OpKind::ReduceMean, {y}, reduceAttrs({0}, false)));
      c.check();
    }
  }
}

TEST_CASE("lowered integer reductions wrap in their dtype", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::I8, DType::I32, DType::I64}) {
    INFO(dtypeName(dtype));
    LoweringCase c(41);
    double range = dtype == DType::I8 ? 128 : 1e9;
    ir::Value *x = c.input("x", dtype, {4, 65}, -range, range);
    c.output(c.node(OpKind::ReduceSum, {x}, reduceAttrs({1}, false)));
    c.output(c.node(OpKind::ReduceSum, {x}, reduceAttrs({0}, false)));
    c.output(c.node(OpKind::ReduceProd, {x}, reduceAttrs({-1}, true)));
    c.output(c.node(OpKind::ReduceMax, {x}, reduceAttrs({0, 1}, false)));
    c.output(c.node(OpKind::ReduceMin, {x}, reduceAttrs({0}, true)));
    c.check();
  }
}

TEST_CASE("lowered argmax and argmin take the first extreme, NaN first", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c;
  // Row 0: the maximum 5 ties at 1 and 4; row 1: the first NaN (at 4) beats the 7s.
  std::vector<double> values{0, 5, 1, 2, 5, -1, 1, 2, 3, 4, 4, 7, -3, 7, kNaN, 7, kNaN, 7, 7, 7};
  ir::Value *x = c.input("x", DType::F32, {2, 10}, values);
  c.output(c.node(OpKind::ArgMax, {x}, {{"axis", 1}, {"keepdims", false}}));
  c.output(c.node(OpKind::ArgMin, {x}, {{"axis", -1}, {"keepdims", true}}));
  NamedTensors want = c.reference();
  CHECK(want.at("out0").toDoubles() == std::vector<double>{1, 4});
  CHECK(want.at("out1").toDoubles() == std::vector<double>{5, 4});
  c.check();

  for (int64_t n : {1, 6, 17, 40, 129}) {
    for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::I64}) {
      INFO(n << " " << dtypeName(dtype));
      LoweringCase d(static_cast<uint64_t>(n) + 100);
      // Few distinct values, so ties are common.
      ir::Value *y = d.input("y", dtype, {3, n, 4}, -3, 3);
      for (int64_t axis : {0, 1, 2})
        d.output(d.node(OpKind::ArgMax, {y}, {{"axis", axis}, {"keepdims", axis == 1}}));
      d.output(d.node(OpKind::ArgMin, {y}, {{"axis", 1}, {"keepdims", false}}));
      // Along the innermost axis the partial accumulators see interleaved
      // elements, and ties between them must go to the lower index.
      ir::Value *z = d.input("z", dtype, {5, n}, -3, 3);
      d.output(d.node(OpKind::ArgMax, {z}, {{"axis", -1}, {"keepdims", false}}));
      d.output(d.node(OpKind::ArgMin, {z}, {{"axis", 1}, {"keepdims", true}}));
      d.check();
    }
  }
}

TEST_CASE("lowered reductions propagate NaN and handle empty axes", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c;
  std::vector<double> values(40, 1.0);
  values[13] = kNaN;
  values[27] = -kInf;
  ir::Value *x = c.input("x", DType::F32, {2, 20}, values);
  for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceMean})
    c.output(c.node(kind, {x}, reduceAttrs({1}, false)));
  ir::Value *empty = c.input("e", DType::F32, {3, 0, 2});
  c.output(c.node(OpKind::ReduceSum, {empty}, reduceAttrs({1}, false)));
  c.output(c.node(OpKind::ReduceProd, {empty}, reduceAttrs({1}, true)));
  c.output(c.node(OpKind::ReduceMean, {empty}, reduceAttrs({1}, false)));
  NamedTensors want = c.reference();
  CHECK(std::isnan(want.at("out1").getDouble(0)));
  CHECK(want.at("out2").getDouble(1) == -kInf);
  CHECK(want.at("out5").getDouble(0) == 1.0);
  c.check();
}

TEST_CASE("lowered reductions fuse a prologue and an epilogue", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(43);
  ir::Value *x = c.input("x", DType::F16, {6, 4, 37});
  ir::Value *bias = c.input("bias", DType::F16, {4});
  ir::Value *e = c.node(OpKind::Exp, {c.node(OpKind::Neg, {x})});
  ir::Value *sum = c.node(OpKind::ReduceSum, {e}, reduceAttrs({-1}, false));
  ir::Value *out = c.node(OpKind::Sqrt, {c.node(OpKind::Add, {sum, bias})});
  c.output(out);
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  CHECK(plan->groups[0].kind == passes::GroupKind::Reduction);
  c.check();

  LoweringCase d(44);
  ir::Value *y = d.input("y", DType::F32, {9, 130});
  ir::Value *t = d.node(OpKind::Transpose, {d.node(OpKind::Tanh, {y})}, {{"perm", Ints{1, 0}}});
  ir::Value *mx = d.node(OpKind::ReduceMax, {t}, reduceAttrs({0}, true));
  d.output(d.node(OpKind::Mul, {mx, mx}));
  d.check();
}

TEST_CASE("an outer reduction wider than one accumulator block", "[lower][reduction]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(45);
  ir::Value *x = c.input("x", DType::F32, {3, 2, 1100});
  c.output(c.node(OpKind::ReduceSum, {x}, reduceAttrs({0}, false)));
  c.output(c.node(OpKind::ArgMin, {x}, {{"axis", 0}, {"keepdims", false}}));
  c.check();
}

} // namespace
} // namespace kiln::test
