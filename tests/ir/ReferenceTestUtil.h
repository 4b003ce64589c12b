// Helpers for the reference interpreter's tests: build a one-op graph, run it
// through interpret(), and compare results with a stated tolerance. Each
// reference test is tagged [op:<name>] for every op it exercises; runOp checks
// the tag, and ReferenceCoverageTest checks that every op has a tagged test.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kiln::test {

inline HostTensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  return HostTensor::fromDoubles(dtype, std::move(shape), values);
}

inline HostTensor f32(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::F32, std::move(shape), std::move(values));
}

inline HostTensor f64(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::F64, std::move(shape), std::move(values));
}

inline HostTensor i64(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::I64, std::move(shape), std::move(values));
}

/// Whether the running Catch test case carries the tag `[op:<name>]`.
inline bool currentTestHasOpTag(ir::OpKind kind) {
  std::string name = Catch::getResultCapture().getCurrentTestName();
  std::string tag = fmt::format("op:{}", ir::opName(kind));
  for (const Catch::TestCase &test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    if (test.name == name)
      return std::find(test.tags.begin(), test.tags.end(), tag) != test.tags.end();
  return false;
}

/// Runs one `kind` node on `operands` (bound as inputs x0, x1, ...) and
/// returns its result, or the error of graph construction or interpretation.
inline Expected<HostTensor> runOp(ir::OpKind kind, const std::vector<HostTensor> &operands,
                                  ir::AttrMap attrs = {}) {
  INFO("the test must be tagged [op:" << ir::opName(kind) << "]");
  CHECK(currentTestHasOpTag(kind));
  ir::Graph graph("single_op");
  ir::NamedTensors inputs;
  std::vector<ir::Value *> values;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = fmt::format("x{}", i);
    KILN_TRY(ir::Value * value,
             graph.addInput(name, ir::TensorType{operands[i].dtype(), operands[i].shape()}));
    values.push_back(value);
    inputs.emplace(name, operands[i]);
  }
  KILN_TRY(ir::Value * result, graph.addNode(kind, std::move(values), std::move(attrs)));
  KILN_TRY_VOID(graph.addOutput("out", result));
  KILN_TRY(ir::NamedTensors outputs, ir::interpret(graph, inputs));
  return std::move(outputs.at("out"));
}

/// runOp that must succeed.
inline HostTensor run(ir::OpKind kind, const std::vector<HostTensor> &operands,
                      ir::AttrMap attrs = {}) {
  auto result = runOp(kind, operands, std::move(attrs));
  if (!result) {
    FAIL("unexpected error: " << result.error().str());
    return HostTensor();
  }
  return std::move(*result);
}

/// Checks dtype, shape and every element exactly (NaN matches NaN).
inline void checkExact(const HostTensor &actual, DType dtype, std::vector<int64_t> shape,
                       const std::vector<double> &expected) {
  CHECK(actual.typeStr() == HostTensor(dtype, shape).typeStr());
  std::vector<double> got = actual.toDoubles();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    CHECK((got[i] == expected[i] || (std::isnan(got[i]) && std::isnan(expected[i]))));
  }
}

/// Checks shape and every element within |got - expected| <= abs + rel * |expected|.
inline void checkClose(const HostTensor &actual, std::vector<int64_t> shape,
                       const std::vector<double> &expected, double rel, double abs) {
  CHECK(actual.shape() == shape);
  std::vector<double> got = actual.toDoubles();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i] << " (rel " << rel
                    << ", abs " << abs << ")");
    CHECK(std::fabs(got[i] - expected[i]) <= abs + rel * std::fabs(expected[i]));
  }
}

/// f64 results of fp64 formulas: both sides compute in fp64, so only the
/// order of operations differs.
inline void checkClose(const HostTensor &actual, std::vector<int64_t> shape,
                       const std::vector<double> &expected) {
  checkClose(actual, std::move(shape), expected, 1e-12, 1e-12);
}

} // namespace kiln::test
