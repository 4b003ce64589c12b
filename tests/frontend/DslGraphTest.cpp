// kiln::Graph itself: inputs, parameters and their flags, name scopes and
// unique names, replacing parameter values, and evaluate's bindings.
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"

using namespace kiln;
using namespace kiln::dsltest;

namespace {
HostTensor f32(Shape shape, std::vector<double> values) {
  return HostTensor::fromDoubles(DType::F32, std::move(shape), values);
}
} // namespace

TEST_CASE("inputs and parameters become IR leaves with their values kept", "[dsl][graph]") {
  Graph g("model", 3);
  CHECK(g.name() == "model");
  CHECK(g.seed() == 3);
  Tensor x = g.input("x", {2, 3}, DType::F16);
  CHECK(x.str() == "f16[2,3]");
  CHECK(x.value()->kind() == ir::Value::Kind::Input);
  Tensor w = g.param("w", f32({3}, {1, 2, 3}));
  Tensor frozen = g.param("frozen", f32({1}, {4}), /*trainable=*/false);
  CHECK(w.value()->kind() == ir::Value::Kind::Param);
  CHECK(g.paramValues().at("w").toDoubles() == std::vector<double>{1, 2, 3});
  CHECK(g.isTrainable("w"));
  CHECK_FALSE(g.isTrainable("frozen"));
  CHECK_FALSE(g.isTrainable("missing"));
  CHECK(g.trainableParamNames() == std::vector<std::string>{"w"});
  CHECK(g.frozenParamNames() == std::vector<std::string>{"frozen"});
  CHECK(frozen.ok());
  CHECK(g.ir().inputs().size() == 1);
  CHECK(g.ir().params().size() == 2);
}

TEST_CASE("name scopes prefix parameters and unique names count per scope", "[dsl][graph]") {
  Graph g;
  CHECK(g.uniqueName("dense") == "dense");
  CHECK(g.uniqueName("dense") == "dense_1");
  CHECK(g.reserveName("dense_2"));
  CHECK(g.uniqueName("dense") == "dense_3");
  CHECK_FALSE(g.reserveName("dense"));
  {
    auto outer = g.nameScope("block1");
    CHECK(g.uniqueName("dense") == "dense"); // a different scope
    {
      auto inner = g.nameScope("conv");
      CHECK(g.scopedName("weight") == "block1.conv.weight");
      g.param("weight", f32({1}, {0}));
    }
    CHECK(g.scopedName("weight") == "block1.weight");
  }
  CHECK(g.scopedName("weight") == "weight");
  CHECK(g.ir().findParam("block1.conv.weight") != nullptr);
  // Inputs are never scoped: they are the model's interface.
  auto scope = g.nameScope("s");
  CHECK(g.input("x", {1}).value()->name() == "x");
}

TEST_CASE("parameter values can be replaced, all or nothing", "[dsl][graph]") {
  Graph g("net");
  g.param("a", f32({2}, {1, 2}));
  g.param("b", f32({1}, {3}));
  REQUIRE(g.setParamValue("a", f32({2}, {5, 6})));
  CHECK(g.paramValues().at("a").toDoubles() == std::vector<double>{5, 6});

  auto wrongShape = g.setParamValue("a", f32({3}, {1, 2, 3}));
  REQUIRE_FALSE(wrongShape);
  CHECK(wrongShape.error().message() == "parameter 'a' is f32[2], the new value is f32[3]");
  auto missing = g.setParamValue("c", f32({1}, {0}));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message() == "graph 'net' has no parameter 'c'");

  // One bad tensor leaves every value as it was.
  auto bad = g.loadParamValues({{"a", f32({2}, {7, 8})}, {"b", f32({2}, {9, 9})}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() == "parameter 'b' is f32[1], the new value is f32[2]");
  CHECK(g.paramValues().at("a").toDoubles() == std::vector<double>{5, 6});
  auto incomplete = g.loadParamValues({{"a", f32({2}, {7, 8})}});
  REQUIRE_FALSE(incomplete);
  CHECK(incomplete.error().message() == "no value given for parameter 'b' of graph 'net'");
  REQUIRE(g.loadParamValues({{"a", f32({2}, {7, 8})}}, /*requireAll=*/false));
  CHECK(g.paramValues().at("a").toDoubles() == std::vector<double>{7, 8});
  auto unknown = g.loadParamValues({{"z", f32({1}, {0})}}, false);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message() == "graph 'net' has no parameter 'z'");
}

TEST_CASE("evaluate binds inputs by name and parameters from the graph", "[dsl][graph]") {
  Graph g("affine");
  Tensor x = g.input("x", {3});
  Tensor scale = g.param("scale", f32({3}, {2, 3, 4}));
  g.output("y", x * scale + 1.0);
  CHECK(run(g, {{"x", f32({3}, {1, -1, 0.5})}}).at("y").toDoubles() ==
        std::vector<double>{3, -2, 3});
  REQUIRE(g.setParamValue("scale", f32({3}, {0, 0, 1})));
  CHECK(run(g, {{"x", f32({3}, {1, -1, 0.5})}}).at("y").toDoubles() ==
        std::vector<double>{1, 1, 1.5});

  auto shadowed = evaluate(g, {{"x", f32({3}, {0, 0, 0})}, {"scale", f32({3}, {1, 1, 1})}});
  REQUIRE_FALSE(shadowed);
  CHECK_THAT(shadowed.error().message(), Catch::Contains("'scale' is a parameter"));
  auto missingInput = evaluate(g, {});
  REQUIRE_FALSE(missingInput);
  CHECK_THAT(missingInput.error().str(), Catch::Contains("'x'"));
}

TEST_CASE("Tensor handles report their state", "[dsl][graph]") {
  Graph g;
  Tensor x = g.input("x", {2, 5});
  CHECK(x.ok());
  CHECK(x.dim(-1) == 5);
  CHECK(x.dim(0) == 2);
  CHECK(x.dim(2) == 0);
  CHECK(x.numElements() == 10);
  Tensor empty;
  CHECK(empty.empty());
  CHECK_FALSE(empty.ok());
  CHECK(empty.str() == "<empty>");
  CHECK(empty.shape().empty());
  Tensor poisoned = reshape(x, {3, 3});
  CHECK(poisoned.poisoned());
  CHECK(poisoned.str() == "<poisoned>");
  CHECK(poisoned.rank() == 0);
}
