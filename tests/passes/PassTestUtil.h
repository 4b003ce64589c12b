// Helpers shared by the pass tests: random bindings for a graph, running the
// reference interpreter, comparing outputs, counting node kinds, and running
// one pass followed by the verifier.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Verifier.h"
#include "passes/PassManager.h"
#include "support/HostTensor.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace kiln::testing {

inline ir::TensorType tensorType(DType dtype, ir::Shape shape) {
  return ir::TensorType{dtype, std::move(shape)};
}

/// The graph of IR `text`, parsed and verified; fails the test otherwise.
inline std::unique_ptr<ir::Graph> parseOrFail(std::string_view text) {
  auto graph = ir::parseGraph(text, "test.kir");
  if (!graph)
    FAIL("parse failed: " << graph.error().str());
  REQUIRE(ir::verifyGraph(**graph));
  return std::move(*graph);
}

/// The nodes of `kind`, in topological order.
inline std::vector<const ir::Node *> nodesOfKind(const ir::Graph &graph, ir::OpKind kind) {
  std::vector<const ir::Node *> found;
  for (const ir::Node *node : graph.topologicalOrder())
    if (node->kind() == kind)
      found.push_back(node);
  return found;
}

/// Fresh uniform values in [low, high) for every input and parameter.
inline ir::NamedTensors randomBindings(const ir::Graph &graph, uint64_t seed, double low = -2.0,
                                       double high = 2.0) {
  Rng rng(seed);
  ir::NamedTensors bindings;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const ir::Value *leaf : *leaves)
      bindings.emplace(leaf->name(), HostTensor::randomUniform(leaf->type().dtype,
                                                               leaf->type().shape, rng, low, high));
  return bindings;
}

/// Runs the interpreter and fails the test on an error.
inline ir::NamedTensors interpretOrFail(const ir::Graph &graph, const ir::NamedTensors &bindings) {
  auto outputs = ir::interpret(graph, bindings);
  if (!outputs)
    FAIL("interpret failed: " << outputs.error().str());
  return std::move(*outputs);
}

/// Bit-for-bit equal outputs: -0 and +0 differ, as the passes keep the sign of
/// zero; any NaN equals any NaN (the payload is not part of kiln's semantics).
inline void requireSameOutputs(const ir::NamedTensors &expected, const ir::NamedTensors &actual) {
  REQUIRE(expected.size() == actual.size());
  for (const auto &[name, want] : expected) {
    INFO("output " << name);
    auto found = actual.find(name);
    REQUIRE(found != actual.end());
    const HostTensor &got = found->second;
    REQUIRE(got.typeStr() == want.typeStr());
    for (int64_t i = 0; i < want.numElements(); ++i) {
      double a = want.getDouble(i), b = got.getDouble(i);
      INFO("element " << i << ": expected " << a << ", got " << b);
      if (std::isnan(a) || std::isnan(b))
        REQUIRE((std::isnan(a) && std::isnan(b)));
      else
        REQUIRE(std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b));
    }
  }
}

/// |got - want| <= tolerance * max(1, |want|) element by element: relative for
/// large values, absolute near zero where relative error is meaningless.
inline void requireCloseOutputs(const ir::NamedTensors &expected, const ir::NamedTensors &actual,
                                double tolerance) {
  REQUIRE(expected.size() == actual.size());
  for (const auto &[name, want] : expected) {
    INFO("output " << name);
    auto found = actual.find(name);
    REQUIRE(found != actual.end());
    const HostTensor &got = found->second;
    REQUIRE(got.typeStr() == want.typeStr());
    for (int64_t i = 0; i < want.numElements(); ++i) {
      double a = want.getDouble(i), b = got.getDouble(i);
      INFO("element " << i << ": expected " << a << ", got " << b);
      if (std::isnan(a) || std::isnan(b)) {
        REQUIRE((std::isnan(a) && std::isnan(b)));
        continue;
      }
      REQUIRE(std::abs(a - b) <= tolerance * std::max(1.0, std::abs(a)));
    }
  }
}

inline size_t countNodes(const ir::Graph &graph, ir::OpKind kind) {
  auto nodes = graph.nodes();
  return static_cast<size_t>(
      std::count_if(nodes.begin(), nodes.end(), [&](const ir::Node *n) { return n->kind() == kind; }));
}

/// Node kinds in topological order, as op names: easy to compare and print.
inline std::vector<std::string> nodeKinds(const ir::Graph &graph) {
  std::vector<std::string> kinds;
  for (const ir::Node *node : graph.topologicalOrder())
    kinds.emplace_back(node->name());
  return kinds;
}

/// Runs `pass` once (to its fixed point if it has one), verifies the graph
/// and returns whether it changed anything.
inline bool runPassOrFail(std::unique_ptr<passes::Pass> pass, ir::Graph &graph) {
  passes::PassManager manager;
  manager.add(std::move(pass));
  auto changed = manager.run(graph);
  if (!changed)
    FAIL("pass failed: " << changed.error().str());
  return *changed;
}

/// A constant splat of `value` with shape `shape`.
inline ir::Value *splat(ir::Graph &graph, DType dtype, ir::Shape shape, double value) {
  auto constant = graph.addNode(ir::OpKind::Constant, {},
                                {{"dtype", dtype}, {"shape", std::move(shape)},
                                 {"value", std::vector<double>{value}}});
  REQUIRE(constant);
  return *constant;
}

/// Adds a node and fails the test when it cannot be created.
inline ir::Value *node(ir::Graph &graph, ir::OpKind kind, std::vector<ir::Value *> operands,
                       ir::AttrMap attrs = {}) {
  auto value = graph.addNode(kind, std::move(operands), std::move(attrs));
  if (!value)
    FAIL("addNode failed: " << value.error().str());
  return *value;
}

} // namespace kiln::testing
