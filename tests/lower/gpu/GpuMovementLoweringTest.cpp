// On the GPU (SIMT simulator): Pointwise groups of data movement against the reference: reshapes,
// transposes (plain and tiled), broadcasts, slices, concat, pad, gather,
// take_along_axis, iota and scalar constants, alone and fused with arithmetic.
#include "lower/gpu/GpuLoweringTestUtil.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

/// A movement op whose result feeds an add, so the group is a kernel (a lone
/// reshape would be an alias with no kernel).
ir::Value *addOne(LoweringCase &c, ir::Value *v) {
  ir::Value *one = c.node(OpKind::Constant, {},
                          {{"dtype", v->type().dtype}, {"shape", Ints{}}, {"value", std::vector<double>{1.0}}});
  return c.node(OpKind::Add, {v, one});
}

TEST_CASE("GPU-lowered reshape, squeeze and unsqueeze read the row-major element", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  struct Case {
    Ints from, to;
  };
  const Case cases[] = {{{6, 35}, {2, 3, 5, 7}}, {{2, 3, 5, 7}, {6, 35}}, {{4, 6}, {3, 8}},
                        {{1, 17, 1}, {17}},     {{3, 1, 5}, {5, 3}},     {{2, 3, 4}, {4, 1, 6}},
                        {{7}, {1, 7, 1, 1}},    {{0, 3}, {3, 0}}};
  for (const Case &k : cases) {
    INFO(ir::shapeStr(k.from) << " -> " << ir::shapeStr(k.to));
    LoweringCase c(1);
    ir::Value *x = c.input("x", DType::F32, k.from);
    ir::Value *r = c.node(OpKind::Reshape, {c.node(OpKind::Neg, {x})}, {{"shape", k.to}});
    c.output(addOne(c, r));
    checkGpu(c);
  }
  LoweringCase c(2);
  ir::Value *x = c.input("x", DType::I32, {3, 1, 4, 1}, -100, 100);
  ir::Value *s = c.node(OpKind::Squeeze, {c.node(OpKind::Neg, {x})}, {{"axes", Ints{1, -1}}});
  ir::Value *u = c.node(OpKind::Unsqueeze, {s}, {{"axes", Ints{0, 3}}});
  c.output(addOne(c, u));
  checkGpu(c);
}

TEST_CASE("GPU-lowered transposes match the reference, tiled or not", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  struct Case {
    Ints shape, perm;
  };
  const Case cases[] = {{{65, 33}, {1, 0}},         {{3, 4, 5}, {2, 0, 1}},
                        {{2, 7, 3, 5}, {0, 2, 1, 3}}, {{2, 17, 9, 3}, {0, 3, 1, 2}},
                        {{1, 127}, {1, 0}},           {{127, 1}, {1, 0}}};
  for (const Case &k : cases) {
    for (DType dtype : {DType::F32, DType::BF16, DType::I8}) {
      INFO(ir::shapeStr(k.shape) << " perm " << ir::shapeStr(k.perm) << " " << dtypeName(dtype));
      LoweringCase c(3);
      ir::Value *x = c.input("x", dtype, k.shape, -50, 50);
      c.output(addOne(c, c.node(OpKind::Transpose, {x}, {{"perm", k.perm}})));
      checkGpu(c);
    }
  }
}

TEST_CASE("GPU: a transpose-like group gets the tiled schedule", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(4);
  ir::Value *x = c.input("x", DType::F32, {40, 70});
  c.output(addOne(c, c.node(OpKind::Transpose, {x}, {{"perm", Ints{1, 0}}})));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  REQUIRE(lower::transposedAxis(plan->groups[0]) == 0);
  lower::Schedule schedule = lower::defaultSchedule(c.graph(), plan->groups[0], testGpuTarget());
  CHECK(std::holds_alternative<lower::GpuTransposeSchedule>(schedule));
  checkGpu(c);
}

TEST_CASE("GPU: a transpose read through another transpose is tiled without staging", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(13);
  ir::Value *x = c.input("x", DType::F32, {33, 33});
  ir::Value *t = c.node(OpKind::Transpose, {x}, {{"perm", Ints{1, 0}}});
  ir::Value *u = c.node(OpKind::Transpose, {addOne(c, t)}, {{"perm", Ints{1, 0}}});
  c.output(c.node(OpKind::Mul, {u, x}));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 1);
  CHECK(lower::transposedAxis(plan->groups[0]) == 0);
  checkGpu(c);
}

TEST_CASE("GPU-lowered broadcast_to and slices", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(5);
  ir::Value *x = c.input("x", DType::F16, {3, 1, 5});
  c.output(addOne(c, c.node(OpKind::BroadcastTo, {x}, {{"shape", Ints{2, 3, 4, 5}}})));
  ir::Value *y = c.input("y", DType::F32, {17, 33});
  c.output(addOne(c, c.node(OpKind::Slice, {y},
                            {{"starts", Ints{1, -10}}, {"stops", Ints{100, 33}}, {"steps", Ints{3, 2}}})));
  c.output(addOne(c, c.node(OpKind::Slice, {y},
                            {{"starts", Ints{-1, 5}}, {"stops", Ints{17, 5}}, {"steps", Ints{1, 1}}})));
  c.output(addOne(c, c.node(OpKind::Slice, {y},
                            {{"starts", Ints{-100, 0}}, {"stops", Ints{-5, 40}}, {"steps", Ints{4, 7}}})));
  checkGpu(c);
}

TEST_CASE("GPU-lowered concat picks the operand by position on any axis", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int64_t axis : {0, 1, -1}) {
    INFO("axis " << axis);
    LoweringCase c(6);
    Ints a{3, 4, 5}, b{3, 4, 5}, e{3, 4, 5};
    size_t k = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    b[k] = 2;
    e[k] = 0;
    ir::Value *x = c.input("x", DType::F32, a);
    ir::Value *empty = c.input("e", DType::F32, e);
    ir::Value *y = c.input("y", DType::F32, b);
    ir::Value *z = c.node(OpKind::Exp, {x});
    c.output(addOne(c, c.node(OpKind::Concat, {z, empty, y, x}, {{"axis", axis}})));
    checkGpu(c);
  }
  LoweringCase c(7);
  ir::Value *p = c.input("p", DType::Bool, {2, 3}, -1, 1);
  ir::Value *q = c.input("q", DType::Bool, {2, 1}, -1, 1);
  c.output(c.node(OpKind::Not, {c.node(OpKind::Concat, {p, q}, {{"axis", 1}})}));
  checkGpu(c);
}

TEST_CASE("GPU-lowered pad fills outside the input and never reads out of bounds", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType dtype : {DType::F32, DType::F8E4M3, DType::I32}) {
    INFO(dtypeName(dtype));
    LoweringCase c(8);
    ir::Value *x = c.input("x", dtype, {3, 5}, -9, 9);
    c.output(addOne(c, c.node(OpKind::Pad, {x}, {{"low", Ints{2, 0}}, {"high", Ints{1, 3}}, {"value", 2.5}})));
    c.output(addOne(c, c.node(OpKind::Pad, {x}, {{"low", Ints{0, 0}}, {"high", Ints{0, 0}}})));
    ir::Value *empty = c.input("e", dtype, {0, 2});
    c.output(addOne(c, c.node(OpKind::Pad, {empty}, {{"low", Ints{1, 1}}, {"high", Ints{1, 0}}, {"value", -1.0}})));
    checkGpu(c);
  }
}

TEST_CASE("GPU-lowered gather and take_along_axis resolve negative indices", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType indexType : {DType::I64, DType::I32, DType::I8}) {
    INFO(dtypeName(indexType));
    LoweringCase c(9);
    ir::Value *table = c.input("table", DType::BF16, {7, 5});
    ir::Value *ids = c.input("ids", indexType, {2, 3}, {0, 6, -1, -7, 3, 2});
    c.output(addOne(c, c.node(OpKind::Gather, {table, ids}, {{"axis", 0}})));
    ir::Value *cols = c.input("cols", indexType, {4}, {4, -5, 0, -1});
    c.output(addOne(c, c.node(OpKind::Gather, {table, cols}, {{"axis", 1}})));
    ir::Value *data = c.input("data", DType::F32, {3, 6});
    ir::Value *picks = c.input("picks", indexType, {3, 2}, {5, -6, 0, 1, -1, 2});
    c.output(addOne(c, c.node(OpKind::TakeAlongAxis, {data, picks}, {{"axis", 1}})));
    ir::Value *rows = c.input("rows", indexType, {2, 6}, {0, 1, 2, -1, -2, -3, 2, 2, 2, 0, 0, 0});
    c.output(addOne(c, c.node(OpKind::TakeAlongAxis, {data, rows}, {{"axis", -2}})));
    checkGpu(c);
  }
}

TEST_CASE("GPU: an out-of-range gather index is clamped, not read out of bounds", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(10);
  ir::Value *table = c.input("table", DType::F32, {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  ir::Value *ids = c.input("ids", DType::I64, {3}, {7, -9, 2});
  c.output(addOne(c, c.node(OpKind::Gather, {table, ids}, {{"axis", 0}})));
  // The reference reports the bad index; the kernel (run by the simulator,
  // which fails on any out-of-bounds access) reads the nearest row instead.
  auto want = ir::interpret(c.graph(), c.inputs());
  REQUIRE(!want);
  CHECK_THAT(want.error().message(), Catch::Contains("index 7 is out of range for axis 0 of size 4"));
  NamedTensors got = runOnGpu(c);
  std::vector<double> expected{31, 32, 1, 2, 21, 22};
  CHECK(got.at("out0").toDoubles() == expected);
}

TEST_CASE("GPU-lowered iota and scalar constants in every dtype", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType dtype : {DType::F32, DType::F16, DType::F8E5M2, DType::I8, DType::I64}) {
    INFO(dtypeName(dtype));
    LoweringCase c(11);
    ir::Value *x = c.input("x", dtype, {3, 300}, -2, 2);
    ir::Value *iota = c.node(OpKind::Iota, {}, {{"axis", 1}, {"dtype", dtype}, {"shape", Ints{3, 300}}});
    ir::Value *k = c.node(OpKind::Constant, {},
                          {{"dtype", dtype}, {"shape", Ints{1}}, {"value", std::vector<double>{0.3}}});
    c.output(c.node(OpKind::Add, {c.node(OpKind::Add, {x, iota}), k}));
    checkGpu(c);
  }
}

TEST_CASE("GPU: movement chains fuse with arithmetic: transpose, reshape, broadcast", "[gpu-lower][movement]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(12);
  ir::Value *x = c.input("x", DType::F32, {2, 5, 3, 4});
  ir::Value *bias = c.input("bias", DType::F32, {12});
  ir::Value *t = c.node(OpKind::Transpose, {x}, {{"perm", Ints{0, 2, 1, 3}}});
  ir::Value *r = c.node(OpKind::Reshape, {t}, {{"shape", Ints{6, 5, 4}}});
  ir::Value *b = c.node(OpKind::Reshape, {bias}, {{"shape", Ints{6, 1, 2}}});
  ir::Value *b2 = c.node(OpKind::Concat, {b, b}, {{"axis", 2}});
  ir::Value *s = c.node(OpKind::Add, {r, b2});
  c.output(c.node(OpKind::Relu, {s}));
  checkGpu(c);
}

} // namespace
} // namespace kiln::test
