// The reference interpreter as a whole: multi-node graphs with parameters,
// rounding after every node, outputs that alias inputs, binding errors with
// their exact text, and node locations on data errors. (The seed CNN at its
// real size runs in ExampleModelsTest.)
#include "ir/ReferenceTestUtil.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

namespace {
TensorType type(DType dtype, Shape shape) { return TensorType{dtype, std::move(shape)}; }

/// y = relu(x @ w + b) summed over the last axis, with x an input and w, b params.
struct DenseGraph {
  Graph graph{"dense"};
  DenseGraph() {
    Value *x = *graph.addInput("x", type(DType::F32, {2, 2}));
    Value *w = *graph.addParam("w", type(DType::F32, {2, 3}));
    Value *b = *graph.addParam("b", type(DType::F32, {3}));
    Value *mm = *graph.addNode(OpKind::MatMul, {x, w});
    Value *biased = *graph.addNode(OpKind::Add, {mm, b});
    Value *act = *graph.addNode(OpKind::Relu, {biased});
    Value *sum = *graph.addNode(OpKind::ReduceSum, {act}, {{"axes", std::vector<int64_t>{-1}}});
    KILN_CHECK(graph.addOutput("activations", act), "output");
    KILN_CHECK(graph.addOutput("sum", sum), "output");
  }
  static NamedTensors inputs() {
    return {{"x", f32({2, 2}, {1, 2, -1, 0})},
            {"w", f32({2, 3}, {1, 0, -1, 2, 1, 0})},
            {"b", f32({3}, {0.5, -1, 0})}};
  }
};
} // namespace

TEST_CASE("interpret runs a dense layer with parameters", "[interpreter]") {
  DenseGraph dense;
  auto outputs = interpret(dense.graph, DenseGraph::inputs());
  REQUIRE(outputs);
  REQUIRE(outputs->size() == 2);
  // x @ w = [[5, 2, -1], [-1, 0, 1]]; + b = [[5.5, 1, -1], [-0.5, -1, 1]].
  checkExact(outputs->at("activations"), DType::F32, {2, 3}, {5.5, 1, 0, 0, 0, 1});
  checkExact(outputs->at("sum"), DType::F32, {2}, {6.5, 1});
}

TEST_CASE("interpret rounds after every node, not only at the end", "[interpreter]") {
  // (1 + 2^-11) rounds to 1 in f16, so subtracting 2^-11 again gives
  // 1 - 2^-11; an interpreter that kept fp64 between nodes would give 1.
  Graph graph;
  Value *x = *graph.addInput("x", type(DType::F16, {1}));
  Value *y = *graph.addInput("y", type(DType::F16, {1}));
  Value *sum = *graph.addNode(OpKind::Add, {x, y});
  Value *difference = *graph.addNode(OpKind::Sub, {sum, y});
  REQUIRE(graph.addOutput("out", difference));
  auto outputs = interpret(graph, {{"x", tensor(DType::F16, {1}, {1})},
                                   {"y", tensor(DType::F16, {1}, {0.00048828125})}});
  REQUIRE(outputs);
  checkExact(outputs->at("out"), DType::F16, {1}, {0.99951171875});
}

TEST_CASE("interpret returns inputs and repeated outputs by name", "[interpreter]") {
  Graph graph;
  Value *x = *graph.addInput("x", type(DType::I32, {2}));
  Value *doubled = *graph.addNode(OpKind::Add, {x, x});
  REQUIRE(graph.addOutput("same", x));
  REQUIRE(graph.addOutput("a", doubled));
  REQUIRE(graph.addOutput("b", doubled));
  auto outputs = interpret(graph, {{"x", tensor(DType::I32, {2}, {3, -4})}});
  REQUIRE(outputs);
  checkExact(outputs->at("same"), DType::I32, {2}, {3, -4});
  checkExact(outputs->at("a"), DType::I32, {2}, {6, -8});
  checkExact(outputs->at("b"), DType::I32, {2}, {6, -8});
}

TEST_CASE("interpret names a missing, extra or mistyped tensor", "[interpreter]") {
  DenseGraph dense;
  auto message = [&](NamedTensors inputs) {
    auto result = interpret(dense.graph, inputs);
    REQUIRE_FALSE(result);
    return result.error().message();
  };
  NamedTensors inputs = DenseGraph::inputs();
  inputs.erase("x");
  CHECK(message(inputs) == "interpret: missing input 'x' of type f32[2,2]");

  inputs = DenseGraph::inputs();
  inputs.erase("b");
  CHECK(message(inputs) == "interpret: missing parameter 'b' of type f32[3]");

  inputs = DenseGraph::inputs();
  inputs.emplace("bias", f32({3}, {0, 0, 0}));
  CHECK(message(inputs) ==
        "interpret: graph 'dense' has no input or parameter named 'bias' (got a tensor f32[3] "
        "for it)");

  inputs = DenseGraph::inputs();
  inputs["w"] = tensor(DType::F16, {2, 3}, {1, 0, -1, 2, 1, 0});
  CHECK(message(inputs) == "interpret: parameter 'w' expects f32[2,3], got f16[2,3]");

  inputs = DenseGraph::inputs();
  inputs["x"] = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto result = interpret(dense.graph, inputs);
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == ErrorCode::ShapeMismatch);
  CHECK(result.error().message() == "interpret: input 'x' expects f32[2,2], got f32[2,3]");
}

TEST_CASE("a data error points at the node's location", "[interpreter]") {
  Graph graph;
  Value *table = *graph.addParam("table", type(DType::F32, {4, 2}));
  Value *ids = *graph.addInput("ids", type(DType::I32, {3}));
  Value *rows = *graph.addNode(OpKind::Gather, {table, ids}, {}, Location{"model.cpp", 12, 3});
  REQUIRE(graph.addOutput("rows", rows));
  auto result = interpret(graph, {{"table", f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
                                  {"ids", tensor(DType::I32, {3}, {1, 4, 0})}});
  REQUIRE_FALSE(result);
  CHECK(result.error().str() == "model.cpp:12:3: gather: index 4 is out of range for axis 0 of "
                                "size 4 (data f32[4,2], indices i32[3])");
}
