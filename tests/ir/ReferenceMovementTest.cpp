// Reference interpreter: data movement ops (reshape, squeeze, unsqueeze,
// transpose, broadcast_to, slice with Python clamping, concat, pad, gather,
// take_along_axis, iota, constant) by hand, and the error text of
// out-of-range indices.
#include "ir/ReferenceTestUtil.h"
#include "ir/graph/Interpreter.h"

#include <limits>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
HostTensor matrix() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

AttrMap sliceAttrs(std::vector<int64_t> starts, std::vector<int64_t> stops,
                   std::vector<int64_t> steps) {
  return {{"starts", std::move(starts)}, {"stops", std::move(stops)}, {"steps", std::move(steps)}};
}
} // namespace

TEST_CASE("reshape, squeeze and unsqueeze keep row-major order",
          "[reference][op:reshape][op:squeeze][op:unsqueeze]") {
  checkExact(run(OpKind::Reshape, {matrix()}, {{"shape", std::vector<int64_t>{3, 2}}}), DType::F32,
             {3, 2}, {1, 2, 3, 4, 5, 6});
  checkExact(
      run(OpKind::Squeeze, {f32({1, 3, 1}, {7, 8, 9})}, {{"axes", std::vector<int64_t>{0, -1}}}),
      DType::F32, {3}, {7, 8, 9});
  checkExact(run(OpKind::Unsqueeze, {f32({3}, {7, 8, 9})}, {{"axes", std::vector<int64_t>{0, 2}}}),
             DType::F32, {1, 3, 1}, {7, 8, 9});
}

TEST_CASE("transpose by hand and a rank-3 permutation", "[reference][op:transpose]") {
  checkExact(run(OpKind::Transpose, {matrix()}, {{"perm", std::vector<int64_t>{1, 0}}}), DType::F32,
             {3, 2}, {1, 4, 2, 5, 3, 6});
  // x[i][j][k] = 100i + 10j + k with shape [2,3,4]; perm [2,0,1] gives y[k][i][j].
  std::vector<double> values, expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        values.push_back(100 * i + 10 * j + k);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        expected.push_back(100 * i + 10 * j + k);
  checkExact(
      run(OpKind::Transpose, {f32({2, 3, 4}, values)}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
      DType::F32, {4, 2, 3}, expected);
}

TEST_CASE("broadcast_to", "[reference][op:broadcast_to]") {
  checkExact(
      run(OpKind::BroadcastTo, {f32({3}, {1, 2, 3})}, {{"shape", std::vector<int64_t>{2, 3}}}),
      DType::F32, {2, 3}, {1, 2, 3, 1, 2, 3});
  checkExact(
      run(OpKind::BroadcastTo, {f32({2, 1}, {1, 2})}, {{"shape", std::vector<int64_t>{2, 2, 3}}}),
      DType::F32, {2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
}

TEST_CASE("slice clamps bounds like Python", "[reference][op:slice]") {
  HostTensor x = f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  checkExact(run(OpKind::Slice, {x}, sliceAttrs({-3}, {100}, {1})), DType::F32, {3}, {7, 8, 9});
  checkExact(run(OpKind::Slice, {x}, sliceAttrs({1}, {-1}, {3})), DType::F32, {3}, {1, 4, 7});
  checkExact(run(OpKind::Slice, {x}, sliceAttrs({-100}, {2}, {1})), DType::F32, {2}, {0, 1});
  checkExact(run(OpKind::Slice, {x}, sliceAttrs({5}, {2}, {1})), DType::F32, {0}, {});
  // Rows 0 and 2, columns 1 and 3 of a [3,4] matrix.
  HostTensor grid = f32({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  checkExact(run(OpKind::Slice, {grid}, sliceAttrs({0, 1}, {3, 4}, {2, 2})), DType::F32, {2, 2},
             {1, 3, 21, 23});
}

TEST_CASE("concat along an inner axis and a negative axis", "[reference][op:concat]") {
  HostTensor a = f32({2, 1}, {1, 2});
  HostTensor b = f32({2, 2}, {10, 11, 20, 21});
  checkExact(run(OpKind::Concat, {a, b}, {{"axis", int64_t{1}}}), DType::F32, {2, 3},
             {1, 10, 11, 2, 20, 21});
  checkExact(run(OpKind::Concat, {b, a, a}, {{"axis", int64_t{-1}}}), DType::F32, {2, 4},
             {10, 11, 1, 1, 20, 21, 2, 2});
  checkExact(run(OpKind::Concat, {b, f32({1, 2}, {7, 8})}, {{"axis", int64_t{0}}}), DType::F32,
             {3, 2}, {10, 11, 20, 21, 7, 8});
}

TEST_CASE("pad with a constant before and after each axis", "[reference][op:pad]") {
  checkExact(run(OpKind::Pad, {f32({2, 2}, {1, 2, 3, 4})},
                 {{"low", std::vector<int64_t>{1, 0}},
                  {"high", std::vector<int64_t>{0, 2}},
                  {"value", 7.0}}),
             DType::F32, {3, 4}, {7, 7, 7, 7, 1, 2, 7, 7, 3, 4, 7, 7});
  checkExact(run(OpKind::Pad, {tensor(DType::I32, {2}, {5, 6})},
                 {{"low", std::vector<int64_t>{2}}, {"high", std::vector<int64_t>{1}}}),
             DType::I32, {5}, {0, 0, 5, 6, 0});
}

TEST_CASE("gather is numpy.take along an axis, negative indices count from the end",
          "[reference][op:gather]") {
  HostTensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  checkExact(run(OpKind::Gather, {data, i64({2}, {2, -3})}), DType::F32, {2, 2}, {5, 6, 1, 2});
  checkExact(run(OpKind::Gather, {data, i64({1, 2}, {1, 0})}, {{"axis", int64_t{1}}}), DType::F32,
             {3, 1, 2}, {2, 1, 4, 3, 6, 5});
  // An embedding lookup with i32 indices of shape [2,2].
  checkExact(run(OpKind::Gather, {data, tensor(DType::I32, {2, 2}, {0, 0, 2, 1})}), DType::F32,
             {2, 2, 2}, {1, 2, 1, 2, 5, 6, 3, 4});
}

TEST_CASE("gather reports an out-of-range index", "[reference][op:gather]") {
  HostTensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto tooLarge = runOp(OpKind::Gather, {data, i64({2}, {0, 3})});
  REQUIRE_FALSE(tooLarge);
  CHECK(tooLarge.error().code() == ErrorCode::InvalidArgument);
  CHECK(tooLarge.error().message() ==
        "gather: index 3 is out of range for axis 0 of size 3 (data f32[3,2], indices i64[2])");
  auto tooNegative = runOp(OpKind::Gather, {data, i64({1}, {-3})}, {{"axis", int64_t{-1}}});
  REQUIRE_FALSE(tooNegative);
  CHECK(tooNegative.error().message() ==
        "gather: index -3 is out of range for axis 1 of size 2 (data f32[3,2], indices i64[1])");
}

TEST_CASE("gather reports an i64 index beyond 2^63 in fp64", "[reference][op:gather]") {
  // INT64_MAX reaches the interpreter as the fp64 value 2^63, which no int64
  // holds: converting it was undefined behaviour.
  HostTensor indices(DType::I64, {1});
  indices.as<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  auto result = runOp(OpKind::Gather, {f32({3}, {1, 2, 3}), indices});
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "gather: index 9.223372036854776e+18 is out of range for axis "
                                    "0 of size 3 (data f32[3], indices i64[1])");
  indices.as<int64_t>()[0] = std::numeric_limits<int64_t>::min(); // -2^63 converts exactly
  auto lowest = runOp(OpKind::Gather, {f32({3}, {1, 2, 3}), indices});
  REQUIRE_FALSE(lowest);
  CHECK(lowest.error().message() == "gather: index -9223372036854775808 is out of range for axis "
                                    "0 of size 3 (data f32[3], indices i64[1])");
}

TEST_CASE("take_along_axis", "[reference][op:take_along_axis]") {
  HostTensor data = f32({2, 3}, {10, 20, 30, 40, 50, 60});
  checkExact(run(OpKind::TakeAlongAxis, {data, i64({2, 2}, {2, 0, 1, -1})}, {{"axis", int64_t{1}}}),
             DType::F32, {2, 2}, {30, 10, 50, 60});
  checkExact(run(OpKind::TakeAlongAxis, {data, i64({1, 3}, {1, 0, 1})}, {{"axis", int64_t{0}}}),
             DType::F32, {1, 3}, {40, 20, 60});
  auto bad = runOp(OpKind::TakeAlongAxis, {data, i64({2, 1}, {0, -4})}, {{"axis", int64_t{-1}}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() == "take_along_axis: index -4 is out of range for axis 1 of size 3 "
                                 "(data f32[2,3], indices i64[2,1])");
}

TEST_CASE("iota counts along one axis", "[reference][op:iota]") {
  auto iota = [](int64_t axis, DType dtype) {
    return run(OpKind::Iota, {},
               {{"shape", std::vector<int64_t>{2, 3}}, {"axis", axis}, {"dtype", dtype}});
  };
  checkExact(iota(1, DType::I32), DType::I32, {2, 3}, {0, 1, 2, 0, 1, 2});
  checkExact(iota(0, DType::F16), DType::F16, {2, 3}, {0, 0, 0, 1, 1, 1});
  checkExact(iota(-1, DType::I64), DType::I64, {2, 3}, {0, 1, 2, 0, 1, 2});
}

TEST_CASE("symbol_size is its size at the run's sizes", "[reference][op:symbol_size]") {
  checkExact(run(OpKind::SymbolSize, {},
                 {{"size", std::vector<SizeExpr>{SizeExpr(12)}}, {"dtype", DType::I32}}),
             DType::I32, {}, {12});
  // In a symbolic graph the interpreter specializes it at the inputs' sizes: N*3 at N = 4.
  Graph graph("rows");
  SizeSymbol n{"N", 1, 9};
  REQUIRE(graph.declareSymbol(n).has_value());
  auto x = graph.addInput("x", makeTensorType(DType::F32, {SizeExpr::symbol(n), 3}).value());
  REQUIRE(x.has_value());
  SizeExpr count = multiply(SizeExpr::symbol(n), SizeExpr(3)).value();
  auto size = graph.addNode(OpKind::SymbolSize, {},
                            {{"size", std::vector<SizeExpr>{count}}, {"dtype", DType::F32}});
  REQUIRE(size.has_value());
  auto scaled = graph.addNode(OpKind::Mul, {*x, *size});
  REQUIRE(scaled.has_value());
  REQUIRE(graph.addOutput("y", *scaled).has_value());
  auto outputs = interpret(
      graph, {{"x", HostTensor::fromDoubles(DType::F32, {4, 3}, std::vector<double>(12, 0.5))}});
  REQUIRE(outputs.has_value());
  CHECK(outputs->at("y").toDoubles() == std::vector<double>(12, 6.0));
  // A symbol the graph does not declare is refused where the node is added.
  auto undeclared = graph.addNode(
      OpKind::SymbolSize, {},
      {{"size", std::vector<SizeExpr>{SizeExpr::symbol({"M", 1, 4})}}, {"dtype", DType::F32}});
  REQUIRE_FALSE(undeclared.has_value());
  CHECK_THAT(undeclared.error().message(),
             Catch::Contains("uses the size symbol M, which graph @rows does not declare"));
}

TEST_CASE("constant: splat, one value per element, rounding to the dtype",
          "[reference][op:constant]") {
  auto constant = [](std::vector<int64_t> shape, DType dtype, std::vector<double> values) {
    return run(OpKind::Constant, {},
               {{"shape", std::move(shape)}, {"dtype", dtype}, {"value", std::move(values)}});
  };
  checkExact(constant({2, 2}, DType::F32, {1.5}), DType::F32, {2, 2}, {1.5, 1.5, 1.5, 1.5});
  checkExact(constant({3}, DType::F32, {1, 2, 3}), DType::F32, {3}, {1, 2, 3});
  checkExact(constant({}, DType::F16, {0.1}), DType::F16, {}, {0.0999755859375});
  checkExact(constant({2}, DType::I32, {2.7, -2.7}), DType::I32, {2}, {2, -2});
}
