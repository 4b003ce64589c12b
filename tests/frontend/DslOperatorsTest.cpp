// The C++ operators on Tensor: which op each builds, scalars becoming splat
// constants of the tensor's dtype, and the values they compute.
#include "frontend/DslTestUtil.h"
#include "frontend/Ops.h"

using namespace kiln;
using namespace kiln::dsltest;
using ir::OpKind;

namespace {

/// The constant operand `index` of t's node: its dtype, shape and splat value.
void checkScalarOperand(const Tensor &t, size_t index, const std::string &type, double value) {
  const ir::Node *constantNode = nodeOf(t)->operand(index)->definingNode();
  REQUIRE(constantNode != nullptr);
  CHECK(constantNode->kind() == OpKind::Constant);
  CHECK(constantNode->type().str() == type);
  CHECK(ir::getFloats(constantNode->attrs(), "value") == std::vector<double>{value});
}

} // namespace

TEST_CASE("tensor-tensor operators build the matching ops", "[dsl][operators]") {
  Graph g;
  Tensor a = g.input("a", {2, 3});
  Tensor b = g.input("b", {3});
  struct Case {
    Tensor result;
    OpKind kind;
    const char *type;
  };
  for (const Case &c : {Case{a + b, OpKind::Add, "f32[2,3]"}, Case{a - b, OpKind::Sub, "f32[2,3]"},
                        Case{a * b, OpKind::Mul, "f32[2,3]"}, Case{a / b, OpKind::Div, "f32[2,3]"},
                        Case{-a, OpKind::Neg, "f32[2,3]"}, Case{a < b, OpKind::Lt, "bool[2,3]"},
                        Case{a <= b, OpKind::Le, "bool[2,3]"}, Case{a > b, OpKind::Gt, "bool[2,3]"},
                        Case{a >= b, OpKind::Ge, "bool[2,3]"}}) {
    INFO(ir::opName(c.kind));
    REQUIRE(c.result.ok());
    CHECK(nodeOf(c.result)->kind() == c.kind);
    CHECK(c.result.str() == c.type);
  }
  CHECK_FALSE(g.hasError());
}

TEST_CASE("scalars become rank-0 constants of the tensor's dtype", "[dsl][operators]") {
  Graph g;
  Tensor x = g.input("x", {4});
  Tensor h = g.input("h", {4}, DType::F16);
  Tensor i = g.input("i", {4}, DType::I32);

  Tensor plus = x + 2.0;
  CHECK(nodeOf(plus)->kind() == OpKind::Add);
  checkScalarOperand(plus, 1, "f32[]", 2.0);
  // The scalar keeps its side: 1 - x is sub(1, x), not sub(x, 1).
  Tensor oneMinus = 1.0 - x;
  CHECK(nodeOf(oneMinus)->kind() == OpKind::Sub);
  checkScalarOperand(oneMinus, 0, "f32[]", 1.0);
  CHECK(nodeOf(oneMinus)->operand(1) == x.value());
  checkScalarOperand(h * 0.5, 1, "f16[]", 0.5);
  checkScalarOperand(3.0 / h, 0, "f16[]", 3.0);
  checkScalarOperand(i * 3.0, 1, "i32[]", 3.0);
  Tensor compared = i >= 2.0;
  CHECK(compared.str() == "bool[4]");
  checkScalarOperand(compared, 1, "i32[]", 2.0);
  checkScalarOperand(0.0 < x, 0, "f32[]", 0.0);
  CHECK_FALSE(g.hasError());
}

TEST_CASE("a scalar an integer tensor cannot hold is an error, not a truncation",
          "[dsl][operators][errors]") {
  Graph g;
  Tensor i = g.input("i", {4}, DType::I64);
  const int line = __LINE__ + 1; // the next line
  Tensor scaled = i * 0.5;
  CHECK(scaled.poisoned());
  std::string message = firstError(g);
  CHECK_THAT(message, Catch::Contains(fileLine(__FILE__, line)));
  CHECK_THAT(message, Catch::Contains("scalar 0.5 is not exactly representable in i64"));
  CHECK_THAT(message, Catch::Contains("i64[4]"));
}

TEST_CASE("operator expressions compute the right values", "[dsl][operators]") {
  Graph g;
  Tensor x = g.input("x", {4});
  Tensor y = g.input("y", {4});
  g.output("expression", (x * 2.0 + 1.0) / y - x);
  g.output("negated", -(x - y));
  g.output("mask", where(x > y, x, 10.0 - y));
  NamedTensors out = run(
      g, {{"x", HostTensor::fromDoubles(DType::F32, {4}, std::vector<double>{1, -2, 3, 0.5})},
          {"y", HostTensor::fromDoubles(DType::F32, {4}, std::vector<double>{2, 4, -1, 0.25})}});
  // (2x + 1) / y - x: 3/2 - 1, -3/4 + 2, 7/-1 - 3, 2/0.25 - 0.5.
  CHECK(out.at("expression").toDoubles() == std::vector<double>{0.5, 1.25, -10, 7.5});
  CHECK(out.at("negated").toDoubles() == std::vector<double>{1, 6, -4, -0.25});
  CHECK(out.at("mask").toDoubles() == std::vector<double>{8, 6, 3, 0.5});
}
