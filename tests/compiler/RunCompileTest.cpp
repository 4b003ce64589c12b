// compile() and run() on bad input (the errors name the problem), repeated and
// concurrent runs of one compiled model, and parameters bound ahead of time.
#include "CompileTestUtil.h"

#include "support/Tolerance.h"

#include <cstring>
#include <thread>

namespace kiln::test {
namespace {

/// y = relu(x @ w + b): an input, two parameters, one output.
struct DenseModel {
  CompileCase c{"dense"};
  Tensor x, w, b;
  DenseModel() {
    x = c.input("x", {3, 5});
    w = c.param("w", {5, 4});
    b = c.param("b", {4});
    c.output("y", relu(matmul(x, w) + b));
    REQUIRE(c.graph().finalize());
  }
};

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

TEST_CASE("compile reports a graph with no outputs left by a failed DSL call", "[compiler]") {
  Graph graph("broken");
  Tensor x = graph.input("x", {2, 3});
  Tensor w = graph.input("w", {4, 5});
  Tensor y = matmul(x, w); // K = 3 against 4: the DSL poisons y
  REQUIRE(y.poisoned());
  graph.output("y", y);
  auto finalized = graph.finalize();
  REQUIRE_FALSE(finalized);
  CHECK_THAT(finalized.error().message(), Catch::Contains("contraction dims differ"));
  // The IR holds no output, and compile() says so rather than compiling nothing.
  auto compiled = compile(graph.ir());
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().code() == ErrorCode::VerifyError);
  CHECK(compiled.error().message() == "the graph has no outputs");
}

TEST_CASE("compile reports a graph that fails verification, naming the node", "[compiler]") {
  Graph graph("mistyped");
  Tensor x = graph.input("x", {2, 3});
  Tensor other = graph.input("other", {3, 2});
  Tensor y = exp(x);
  graph.output("y", y);
  REQUIRE(graph.finalize());
  // Point exp at an operand of another shape without re-inferring its type.
  y.value()->definingNode()->setOperand(0, other.value());
  auto compiled = compile(graph.ir());
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().code() == ErrorCode::VerifyError);
  CHECK_THAT(compiled.error().message(),
             Catch::Contains("result type is f32[2,3]") && Catch::Contains("f32[3,2]"));
  // The location is the DSL line that built exp.
  REQUIRE(compiled.error().location().has_value());
  CHECK_THAT(compiled.error().location()->file, Catch::Contains("RunCompileTest.cpp"));
}

TEST_CASE("compile reports a cycle", "[compiler]") {
  Graph graph("cyclic");
  Tensor x = graph.input("x", {4});
  Tensor a = exp(x);
  Tensor b = neg(a);
  graph.output("b", b);
  a.value()->definingNode()->setOperand(0, b.value());
  auto compiled = compile(graph.ir());
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().message() == "the graph has a cycle");
}

TEST_CASE("run rejects missing, unknown, misshapen and mistyped tensors with exact messages",
          "[compiler]") {
  DenseModel model;
  CompiledModel compiled = compileOrFail(model.c.graph().ir());
  NamedTensors good = model.c.tensors();
  REQUIRE(compiled.run(good));

  auto runError = [&](const NamedTensors &tensors) {
    auto result = compiled.run(tensors);
    REQUIRE_FALSE(result);
    CHECK(result.error().code() == ErrorCode::InvalidArgument);
    return result.error().message();
  };
  SECTION("a missing input") {
    NamedTensors tensors = good;
    tensors.erase("x");
    CHECK(runError(tensors) == "missing input 'x'");
  }
  SECTION("a missing parameter") {
    NamedTensors tensors = good;
    tensors.erase("w");
    CHECK(runError(tensors) == "parameter 'w' has no value: it was neither passed with the inputs "
                               "nor bound");
  }
  SECTION("an unknown name") {
    NamedTensors tensors = good;
    tensors.emplace("bogus", HostTensor(DType::F32, {1}));
    CHECK(runError(tensors) == "'bogus' is neither an input nor a parameter of the model");
  }
  SECTION("a wrong shape") {
    NamedTensors tensors = good;
    tensors.insert_or_assign("x", HostTensor(DType::F32, {5, 3}));
    CHECK(runError(tensors) == "input 'x' must be f32[3, 5], got f32[5, 3]");
  }
  SECTION("a wrong dtype") {
    NamedTensors tensors = good;
    tensors.insert_or_assign("x", HostTensor(DType::F16, {3, 5}));
    CHECK(runError(tensors) == "input 'x' must be f32[3, 5], got f16[3, 5]");
  }
  SECTION("a parameter of the wrong shape") {
    NamedTensors tensors = good;
    tensors.insert_or_assign("b", HostTensor(DType::F32, {1, 4}));
    CHECK(runError(tensors) == "parameter 'b' must be f32[4], got f32[1, 4]");
  }
  SECTION("bindParams checks names and types") {
    auto unknown = compiled.bindParams({{"x", HostTensor(DType::F32, {3, 5})}});
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message() == "'x' is not a parameter of the model");
    auto mistyped = compiled.bindParams({{"w", HostTensor(DType::F64, {5, 4})}});
    REQUIRE_FALSE(mistyped);
    CHECK(mistyped.error().message() == "parameter 'w' must be f32[5, 4], got f64[5, 4]");
  }
}

TEST_CASE("bound parameters let runs pass the inputs only, and run() overrides them",
          "[compiler]") {
  DenseModel model;
  CompiledModel compiled = compileOrFail(model.c.graph().ir());
  NamedTensors all = model.c.tensors();
  auto expected = ir::interpret(model.c.graph().ir(), all);
  REQUIRE(expected);

  REQUIRE(compiled.bindParams(model.c.graph().paramValues()));
  auto inputsOnly = compiled.run({{"x", all.at("x")}}, {.poisonBuffers = true});
  REQUIRE(inputsOnly);
  CHECK(compareTensors(inputsOnly->at("y"), expected->at("y"), toleranceFor(DType::F32)).ok);

  // A tensor passed to run() wins over the bound one, for that run only.
  HostTensor zeroBias(DType::F32, {4});
  NamedTensors withBias = {{"x", all.at("x")}, {"b", zeroBias}};
  NamedTensors referenceTensors = all;
  referenceTensors.insert_or_assign("b", zeroBias);
  auto expectedZeroBias = ir::interpret(model.c.graph().ir(), referenceTensors);
  REQUIRE(expectedZeroBias);
  auto overridden = compiled.run(withBias);
  REQUIRE(overridden);
  CHECK(compareTensors(overridden->at("y"), expectedZeroBias->at("y"), toleranceFor(DType::F32))
            .ok);
  auto again = compiled.run({{"x", all.at("x")}});
  REQUIRE(again);
  CHECK(sameBytes(again->at("y"), inputsOnly->at("y")));
}

TEST_CASE("a model run twice and from 4 threads at once gives identical results", "[compiler]") {
  // Several kernels and arena buffers, so concurrent runs share code but not memory.
  CompileCase c("concurrent");
  Tensor x = c.input("x", {33, 65});
  Tensor w = c.param("w", {65, 65});
  Tensor h = relu(matmul(x, w));
  Tensor s = softmax(h - reduceMean(h, {1}, true));
  c.output("y", matmul(s, w) + h);
  c.output("sum", reduceSum(s, {0}));
  REQUIRE(c.graph().finalize());
  CompiledModel compiled = compileOrFail(c.graph().ir());
  NamedTensors tensors = c.tensors();
  auto first = compiled.run(tensors, {.poisonBuffers = true});
  REQUIRE(first);
  auto second = compiled.run(tensors, {.poisonBuffers = true});
  REQUIRE(second);
  for (const auto &[name, tensor] : *first)
    CHECK(sameBytes(tensor, second->at(name)));

  constexpr int kThreads = 4, kRunsPerThread = 5;
  std::vector<std::vector<NamedTensors>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRunsPerThread; ++r) {
        auto out = compiled.run(tensors, {.poisonBuffers = true});
        if (!out) {
          errors[t] = out.error().str();
          return;
        }
        results[t].push_back(std::move(*out));
      }
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(errors[t].empty());
    REQUIRE(results[t].size() == static_cast<size_t>(kRunsPerThread));
    for (const NamedTensors &out : results[t])
      for (const auto &[name, tensor] : *first) {
        INFO("output " << name);
        CHECK(sameBytes(out.at(name), tensor));
      }
  }
  // And the shared results are right.
  auto expected = ir::interpret(c.graph().ir(), tensors);
  REQUIRE(expected);
  for (const auto &[name, tensor] : *expected)
    CHECK(compareTensors(first->at(name), tensor, toleranceFor(tensor.dtype())).ok);
}

} // namespace
} // namespace kiln::test
