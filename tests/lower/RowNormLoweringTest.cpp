// Row kernels against the reference, on every target (LoweringTestUtil.h): softmax and log_softmax
// on the last and on inner axes, layer_norm over one and two trailing axes, every float dtype, rows
// with infinities and NaN, with prologues and epilogues fused.
#include "LoweringTestUtil.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

TEST_CASE("lowered softmax and log_softmax along the last axis", "[lower][rownorm]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (int64_t n : {1, 3, 7, 17, 33, 64, 127, 1000}) {
    for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax}) {
      INFO(ir::opName(kind) << " over " << n);
      LoweringCase c(static_cast<uint64_t>(n));
      ir::Value *x = c.input("x", DType::F32, {5, n}, -8.0, 8.0);
      c.output(c.node(kind, {x}, {{"axis", -1}}));
      c.check();
    }
  }
}

TEST_CASE("lowered softmax on every float dtype and on inner axes", "[lower][rownorm]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : kFloatTypes) {
    for (int64_t axis : {0, 1, 2, -1}) {
      for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax}) {
        INFO(ir::opName(kind) << " axis " << axis << " " << dtypeName(dtype));
        LoweringCase c(static_cast<uint64_t>(axis + 10));
        ir::Value *x = c.input("x", dtype, {3, 17, 6}, -4.0, 4.0);
        c.output(c.node(kind, {x}, {{"axis", axis}}));
        c.check();
      }
    }
  }
  // A trailing unit axis takes the row path; a wide inner axis takes blocks.
  LoweringCase c(20);
  ir::Value *x = c.input("x", DType::F32, {4, 9, 1});
  c.output(c.node(OpKind::Softmax, {x}, {{"axis", 1}}));
  ir::Value *y = c.input("y", DType::F32, {2, 3, 1030});
  c.output(c.node(OpKind::LogSoftmax, {y}, {{"axis", 1}}));
  c.check();
}

TEST_CASE("lowered softmax rows with infinities and NaN", "[lower][rownorm]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c;
  std::vector<double> values{1, 2, kInf, 3, -kInf, -kInf, -kInf, -kInf, 0, kNaN, 1, 2,
                             -kInf, 5, 5, -kInf};
  ir::Value *x = c.input("x", DType::F32, {4, 4}, values);
  c.output(c.node(OpKind::Softmax, {x}, {{"axis", -1}}));
  c.output(c.node(OpKind::LogSoftmax, {x}, {{"axis", -1}}));
  NamedTensors want = c.reference();
  CHECK(want.at("out0").getDouble(13) == 0.5);
  c.check();
}

TEST_CASE("lowered layer_norm over one and two trailing axes", "[lower][rownorm]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    for (int64_t axis : {-1, -2, 1, 0}) {
      INFO("axis " << axis << " " << dtypeName(dtype));
      LoweringCase c(static_cast<uint64_t>(axis + 30));
      Ints shape{3, 5, 33};
      size_t first = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      Ints normalized(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end());
      ir::Value *x = c.input("x", dtype, shape, -3.0, 5.0);
      ir::Value *scale = c.input("scale", dtype, normalized, 0.5, 1.5);
      ir::Value *bias = c.input("bias", dtype, normalized);
      c.output(c.node(OpKind::LayerNorm, {x, scale, bias}, {{"axis", axis}, {"epsilon", 1e-5}}));
      c.check();
    }
  }
}

TEST_CASE("row kernels fuse their prologue and epilogue", "[lower][rownorm]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  LoweringCase c(50);
  ir::Value *x = c.input("x", DType::BF16, {6, 65});
  ir::Value *mask = c.input("mask", DType::BF16, {65});
  ir::Value *scores = c.node(OpKind::Add, {c.node(OpKind::Mul, {x, x}), mask});
  ir::Value *p = c.node(OpKind::Softmax, {scores}, {{"axis", -1}});
  c.output(c.node(OpKind::Cast, {p}, {{"dtype", DType::F32}}));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  CHECK(plan->groups[0].kind == passes::GroupKind::RowNorm);
  c.check();

  LoweringCase d(51);
  ir::Value *y = d.input("y", DType::F32, {4, 2, 12});
  ir::Value *gamma = d.input("gamma", DType::F32, {2, 12});
  ir::Value *beta = d.input("beta", DType::F32, {2, 12});
  ir::Value *n = d.node(OpKind::LayerNorm, {d.node(OpKind::Relu, {y}), gamma, beta}, {{"axis", 1}});
  d.output(d.node(OpKind::Gelu, {n}, {{"approximate", std::string("tanh")}}));
  d.check();
}

} // namespace
} // namespace kiln::test
