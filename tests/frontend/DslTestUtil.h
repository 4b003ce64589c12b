// Helpers for the DSL tests: the IR node behind a Tensor, seeded random
// inputs, and running a finished graph through the reference interpreter.
#pragma once

#include "frontend/Evaluate.h"
#include "frontend/Graph.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

namespace kiln::dsltest {

/// The node that computes `t` (nullptr for inputs and parameters).
inline const ir::Node *nodeOf(const Tensor &t) {
  return t.ok() ? t.value()->definingNode() : nullptr;
}

/// A seeded uniform f32 tensor in [-1, 1).
inline HostTensor randomF32(Shape shape, uint64_t seed) {
  Rng rng(seed);
  return HostTensor::randomUniform(DType::F32, std::move(shape), rng);
}

/// evaluate(), failing the test with the error text when it fails.
inline NamedTensors run(const Graph &graph, const NamedTensors &inputs) {
  auto outputs = evaluate(graph, inputs);
  if (!outputs)
    FAIL(outputs.error().str());
  return *outputs;
}

/// The graph's first error as text, failing the test when there is none.
inline std::string firstError(const Graph &graph) {
  auto status = graph.finalize();
  REQUIRE_FALSE(status.has_value());
  return status.error().str();
}

/// "DslErrorsTest.cpp:<line>:" — how an error names a line of a test file.
inline std::string fileLine(const char *file, int line) {
  std::string path(file);
  return path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line) + ":";
}

/// Every element finite.
inline bool allFinite(const HostTensor &t) {
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (!std::isfinite(t.getDouble(i)))
      return false;
  return true;
}

} // namespace kiln::dsltest
