// The graph IR text form: exact printing, print -> parse -> print round trips
// for every op, float attributes that are hard to print, and parse errors with
// their exact line:column and message.
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

using namespace kiln;
using namespace kiln::ir;

namespace {

TensorType t(DType dtype, Shape shape) { return TensorType{dtype, std::move(shape)}; }

// One op applied to fresh graph inputs, with attributes chosen to differ from
// every default so that printing defaults cannot hide a lost attribute.
struct OpCase {
  OpKind kind;
  std::vector<TensorType> operands;
  AttrMap attrs;
  /// Optional attributes left at their default because no other value is
  /// legal for these operands.
  std::set<std::string> keptDefaults = {};
};

std::vector<OpCase> opCases() {
  using D = DType;
  using I = std::vector<int64_t>;
  using F = std::vector<double>;
  TensorType f32x23 = t(D::F32, {2, 3});
  std::vector<OpCase> cases = {
      {OpKind::Neg, {t(D::I32, {5})}, {}},
      {OpKind::Abs, {t(D::F64, {2, 1})}, {}},
      {OpKind::Exp, {f32x23}, {}},
      {OpKind::Log, {t(D::F16, {7})}, {}},
      {OpKind::Sqrt, {t(D::BF16, {3, 1, 2})}, {}},
      {OpKind::Rsqrt, {t(D::F32, {})}, {}},
      {OpKind::Tanh, {f32x23}, {}},
      {OpKind::Sigmoid, {t(D::F64, {4})}, {}},
      {OpKind::Relu, {t(D::I8, {3, 3})}, {}},
      {OpKind::Gelu, {f32x23}, {{"approximate", std::string("tanh")}}},
      {OpKind::Silu, {f32x23}, {}},
      {OpKind::Erf, {t(D::F32, {0, 3})}, {}},
      {OpKind::Sin, {t(D::F32, {1})}, {}},
      {OpKind::Cos, {t(D::F32, {1})}, {}},
      {OpKind::Not, {t(D::Bool, {2, 2})}, {}},
      {OpKind::Cast, {f32x23}, {{"dtype", D::BF16}}},
      {OpKind::Clamp, {f32x23}, {{"min", -1.5}, {"max", 6.0}}},
      {OpKind::Relu6, {t(D::I32, {5})}, {}},
      {OpKind::HardSigmoid, {f32x23}, {{"alpha", 1.0 / 6.0}, {"beta", 0.25}}},
      {OpKind::HardSwish, {t(D::BF16, {3, 1})}, {}},
      {OpKind::Softplus,
       {t(D::F16, {7})},
       {{"beta", 2.0}, {"threshold", std::numeric_limits<double>::infinity()}}},
      {OpKind::Mish, {t(D::F64, {0, 2})}, {}},
      {OpKind::LeakyRelu, {f32x23}, {{"alpha", 0.2}}},
      {OpKind::Elu, {f32x23}, {{"alpha", 0.7}}},
      {OpKind::Add, {t(D::F32, {2, 1, 3}), t(D::F32, {4, 3})}, {}},
      {OpKind::Sub, {t(D::I64, {3}), t(D::I64, {})}, {}},
      {OpKind::Mul, {f32x23, f32x23}, {}},
      {OpKind::Div, {t(D::I32, {2, 1}), t(D::I32, {1, 5})}, {}},
      {OpKind::Pow, {f32x23, t(D::F32, {3})}, {}},
      {OpKind::Max, {f32x23, f32x23}, {}},
      {OpKind::Min, {t(D::F16, {4}), t(D::F16, {4})}, {}},
      {OpKind::Eq, {t(D::I64, {3}), t(D::I64, {3})}, {}},
      {OpKind::Ne, {f32x23, f32x23}, {}},
      {OpKind::Lt, {f32x23, t(D::F32, {})}, {}},
      {OpKind::Le, {t(D::I32, {2}), t(D::I32, {2})}, {}},
      {OpKind::Gt, {f32x23, f32x23}, {}},
      {OpKind::Ge, {f32x23, f32x23}, {}},
      {OpKind::And, {t(D::Bool, {3}), t(D::Bool, {3})}, {}},
      {OpKind::Or, {t(D::Bool, {2, 3}), t(D::Bool, {3})}, {}},
      {OpKind::Where, {t(D::Bool, {2, 3}), f32x23, t(D::F32, {3})}, {}},
      {OpKind::ReduceSum, {t(D::F32, {2, 3, 4})}, {{"axes", I{0, -1}}, {"keepdims", true}}},
      {OpKind::ReduceMean, {t(D::F32, {2, 3, 4})}, {{"axes", I{1}}, {"keepdims", true}}},
      {OpKind::ReduceMax, {t(D::I32, {5, 2})}, {{"axes", I{0}}, {"keepdims", true}}},
      {OpKind::ReduceMin, {t(D::F64, {5, 2})}, {{"axes", I{1, 0}}, {"keepdims", true}}},
      {OpKind::ReduceProd, {t(D::F32, {3, 2})}, {{"axes", I{0, 1}}, {"keepdims", true}}},
      {OpKind::ArgMax, {t(D::F32, {3, 4})}, {{"axis", int64_t{-1}}, {"keepdims", true}}},
      {OpKind::ArgMin, {t(D::I32, {3, 4})}, {{"axis", int64_t{0}}, {"keepdims", true}}},
      {OpKind::MatMul,
       {t(D::F32, {2, 4, 3}), t(D::F32, {5, 4})},
       {{"accumulate", D::F64},
        {"allow_tf32", true},
        {"transpose_a", true},
        {"transpose_b", true}}},
      {OpKind::Conv2D,
       {t(D::F32, {1, 9, 10, 4}), t(D::F32, {6, 3, 2, 2})},
       {{"accumulate", D::F64},
        {"allow_tf32", true},
        {"dilation", I{2, 1}},
        {"groups", int64_t{2}},
        {"layout", std::string("nhwc")},
        {"padding", I{1, 0, 2, 1}},
        {"stride", I{2, 3}}}},
      {OpKind::MaxPool2D,
       {t(D::F32, {1, 8, 7, 3})},
       {{"kernel", I{3, 2}},
        {"layout", std::string("nhwc")},
        {"padding", I{1, 1, 0, 1}},
        {"stride", I{2, 1}}}},
      {OpKind::AvgPool2D,
       {t(D::F16, {2, 3, 6, 6})},
       {{"count_include_pad", true},
        {"kernel", I{2, 2}},
        {"layout", std::string("nchw")},
        {"padding", I{1, 0, 1, 0}},
        {"stride", I{2, 2}}},
       {"layout"}}, // nhwc is covered by max_pool2d; nchw is the default.
      {OpKind::GlobalAvgPool, {t(D::F32, {2, 5, 5, 3})}, {{"layout", std::string("nhwc")}}},
      {OpKind::Softmax, {f32x23}, {{"axis", int64_t{0}}}},
      {OpKind::LogSoftmax, {t(D::F64, {2, 3, 4})}, {{"axis", int64_t{1}}}},
      {OpKind::LayerNorm,
       {t(D::F32, {2, 3, 4}), t(D::F32, {3, 4}), t(D::F32, {3, 4})},
       {{"axis", int64_t{1}}, {"epsilon", 1e-3}}},
      {OpKind::BatchNorm,
       {t(D::F32, {2, 4, 4, 3}), t(D::F32, {3}), t(D::F32, {3}), t(D::F32, {3}), t(D::F32, {3})},
       {{"axis", int64_t{3}}, {"epsilon", 0.25}}},
      {OpKind::ScaledDotProductAttention,
       {t(D::F32, {2, 4, 8}), t(D::F32, {2, 6, 8}), t(D::F32, {2, 6, 3})},
       {{"causal", true}, {"scale", 0.125}}},
      {OpKind::Reshape, {f32x23}, {{"shape", I{3, 1, 2}}}},
      {OpKind::Transpose, {t(D::F32, {2, 3, 4})}, {{"perm", I{2, 0, 1}}}},
      {OpKind::BroadcastTo, {t(D::I64, {3, 1})}, {{"shape", I{2, 3, 4}}}},
      {OpKind::Slice,
       {t(D::F32, {10, 6})},
       {{"starts", I{1, -4}}, {"steps", I{3, 1}}, {"stops", I{100, -1}}}},
      {OpKind::Concat, {f32x23, t(D::F32, {2, 1}), t(D::F32, {2, 4})}, {{"axis", int64_t{-1}}}},
      {OpKind::Pad,
       {f32x23},
       {{"high", I{0, 2}}, {"low", I{1, 0}}, {"value", -std::numeric_limits<double>::infinity()}}},
      {OpKind::Gather, {t(D::F32, {4, 10, 3}), t(D::I32, {2, 5})}, {{"axis", int64_t{1}}}},
      {OpKind::TakeAlongAxis, {t(D::F32, {4, 10}), t(D::I64, {4, 2})}, {{"axis", int64_t{1}}}},
      {OpKind::Squeeze, {t(D::F32, {1, 3, 1})}, {{"axes", I{0, -1}}}},
      {OpKind::Unsqueeze, {f32x23}, {{"axes", I{0, 3}}}},
      {OpKind::Iota, {}, {{"axis", int64_t{1}}, {"dtype", D::I32}, {"shape", I{2, 5}}}},
      {OpKind::Constant,
       {},
       {{"dtype", D::F16}, {"shape", I{2, 2}}, {"value", F{0.5, -2.0, 1e-3, 65504.0}}}},
      {OpKind::AllReduce, {f32x23}, {{"op", std::string("mean")}}},
      {OpKind::SymbolSize, {}, {{"dtype", D::I64}, {"size", std::vector<SizeExpr>{SizeExpr(12)}}}},
  };
  return cases;
}

// Builds `graph @<op> { input(s); one node; output }`. Odd operands become
// params so both leaf kinds are exercised.
std::unique_ptr<Graph> buildCase(const OpCase &opCase) {
  auto graph = std::make_unique<Graph>(std::string(opName(opCase.kind)));
  std::vector<Value *> operands;
  for (size_t i = 0; i < opCase.operands.size(); ++i) {
    std::string name = "v" + std::to_string(i);
    auto value = i % 2 == 0 ? graph->addInput(name, opCase.operands[i])
                            : graph->addParam(name + ".weight", opCase.operands[i]);
    REQUIRE(value.has_value());
    operands.push_back(*value);
  }
  auto result = graph->addNode(opCase.kind, operands, opCase.attrs);
  INFO(std::string(opName(opCase.kind)) + ": " + (result ? "" : result.error().str()));
  REQUIRE(result.has_value());
  REQUIRE(graph->addOutput("out", *result).has_value());
  return graph;
}

std::unique_ptr<Graph> parseOrFail(std::string_view text) {
  auto graph = parseGraph(text, "test.kir");
  INFO(text);
  INFO((graph ? std::string() : graph.error().str()));
  REQUIRE(graph.has_value());
  return std::move(*graph);
}

// The error a malformed text gives, as "line:column: message".
std::string parseError(std::string_view text) {
  auto graph = parseGraph(text, "bad.kir");
  INFO(text);
  REQUIRE_FALSE(graph.has_value());
  const Error &error = graph.error();
  CHECK(error.code() == ErrorCode::ParseError);
  REQUIRE(error.location().has_value());
  CHECK(error.location()->file == "bad.kir");
  return std::to_string(error.location()->line) + ":" + std::to_string(error.location()->column) +
         ": " + error.message();
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

} // namespace

TEST_CASE("printGraph writes the canonical form exactly", "[ir][printer]") {
  Graph graph("cnn");
  Value *x = *graph.addInput("x", t(DType::F32, {8, 1, 28, 28}));
  Value *w = *graph.addParam("conv1.weight", t(DType::F32, {32, 1, 3, 3}));
  Value *conv = *graph.addNode(OpKind::Conv2D, {x, w});
  Value *relu = *graph.addNode(OpKind::Relu, {conv});
  REQUIRE(graph.addNode(OpKind::Constant, {},
                        {{"dtype", DType::F32}, {"shape", std::vector<int64_t>{}},
                         {"value", std::vector<double>{0.5}}})
              .has_value());
  REQUIRE(graph.addOutput("probs", relu).has_value());
  const char *expected =
      "graph @cnn {\n"
      "  input %x: f32[8,1,28,28]\n"
      "  param %conv1.weight: f32[32,1,3,3]\n"
      "  %0: f32[8,32,26,26] = conv2d(%x, %conv1.weight) {accumulate = f32, allow_tf32 = false, "
      "dilation = [1, 1], groups = 1, layout = \"nchw\", padding = [0, 0, 0, 0], stride = [1, "
      "1]}\n"
      "  %1: f32[8,32,26,26] = relu(%0)\n"
      "  %2: f32[] = constant() {dtype = f32, shape = [], value = [0.5]}\n"
      "  output \"probs\" = %1\n"
      "}\n";
  CHECK(printGraph(graph) == expected);
  // Canonical text parses and prints back to itself.
  CHECK(printGraph(*parseOrFail(expected)) == expected);
}

TEST_CASE("nodes are numbered in topological order, not creation order", "[ir][printer]") {
  Graph graph("order");
  Value *x = *graph.addInput("x", t(DType::F32, {3}));
  Value *a = *graph.addNode(OpKind::Exp, {x});
  Value *b = *graph.addNode(OpKind::Neg, {x});
  Value *c = *graph.addNode(OpKind::Add, {a, b});
  // Rewire so the oldest node (exp) depends on the newest (add).
  Value *d = *graph.addNode(OpKind::Relu, {b});
  graph.nodes()[0]->setOperand(0, d);
  REQUIRE(graph.addOutput("y", c).has_value());
  const char *expected = "graph @order {\n"
                         "  input %x: f32[3]\n"
                         "  %0: f32[3] = neg(%x)\n"
                         "  %1: f32[3] = relu(%0)\n"
                         "  %2: f32[3] = exp(%1)\n"
                         "  %3: f32[3] = add(%2, %0)\n"
                         "  output \"y\" = %3\n"
                         "}\n";
  CHECK(printGraph(graph) == expected);
  CHECK(printGraph(*parseOrFail(expected)) == expected);
}

TEST_CASE("every op round-trips through text with non-default attributes", "[ir][parser]") {
  std::set<OpKind> covered;
  for (const OpCase &opCase : opCases()) {
    std::string op(opName(opCase.kind));
    INFO("op " << op);
    covered.insert(opCase.kind);
    // The case must set every optional attribute to a non-default value.
    for (const AttrSpec &spec : opInfo(opCase.kind).attrs) {
      if (!spec.defaultValue || opCase.keptDefaults.contains(spec.name))
        continue;
      INFO("attribute " << spec.name);
      auto it = opCase.attrs.find(spec.name);
      REQUIRE(it != opCase.attrs.end());
      CHECK(attrStr(it->second) != attrStr(*spec.defaultValue));
    }

    std::unique_ptr<Graph> built = buildCase(opCase);
    std::string text = printGraph(*built);
    std::unique_ptr<Graph> parsed = parseOrFail(text);
    CHECK(printGraph(*parsed) == text);

    // Beyond equal text: the parsed node is the built node.
    REQUIRE(parsed->numNodes() == 1);
    const Node &original = *built->nodes()[0];
    const Node &reread = *parsed->nodes()[0];
    CHECK(reread.kind() == original.kind());
    CHECK(reread.type() == original.type());
    CHECK(reread.attrs().size() == original.attrs().size());
    for (const auto &[name, value] : original.attrs()) {
      auto it = reread.attrs().find(name);
      REQUIRE(it != reread.attrs().end());
      CHECK(attrStr(it->second) == attrStr(value));
      CHECK(it->second.index() == value.index());
    }
    CHECK(parsed->inputs().size() + parsed->params().size() == opCase.operands.size());
    // The node's location points at its op name on line 2 + operand count.
    CHECK(reread.location().file == "test.kir");
    CHECK(reread.location().line == 2 + opCase.operands.size());
    CHECK(reread.location().column == text.find(op + "(", text.find("\n  %0")) -
                                          text.find("\n  %0"));
  }
  for (const OpInfo &info : allOps()) {
    INFO("op without a round-trip case: " << info.name);
    CHECK(covered.contains(info.kind));
  }
  CHECK(covered.size() == static_cast<size_t>(kNumOps));
}

TEST_CASE("awkward float attributes survive print and parse bit for bit", "[ir][parser]") {
  const double values[] = {0.1,
                           1e-300,
                           -0.0,
                           0.0,
                           1.0 / 3.0,
                           -2.0 / 3.0,
                           1.0,
                           -7.0,
                           1e22,
                           123456789012345678.0,
                           5e-324, // the smallest subnormal
                           2.2250738585072014e-308,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  for (double value : values) {
    INFO("value " << attrStr(Attr(value)));
    Graph graph("floats");
    Value *x = *graph.addInput("x", t(DType::F64, {2}));
    Value *padded =
        *graph.addNode(OpKind::Pad, {x}, {{"low", std::vector<int64_t>{1}},
                                          {"high", std::vector<int64_t>{0}},
                                          {"value", value}});
    Value *constant = *graph.addNode(
        OpKind::Constant, {},
        {{"dtype", DType::F64}, {"shape", std::vector<int64_t>{2}},
         {"value", std::vector<double>{value, -value}}});
    REQUIRE(graph.addOutput("a", padded).has_value());
    REQUIRE(graph.addOutput("b", constant).has_value());
    std::string text = printGraph(graph);
    // A float never prints like an int, or it would read back as one.
    std::string printed = attrStr(Attr(value));
    CHECK(printed.find_first_of(".ein") != std::string::npos);

    std::unique_ptr<Graph> parsed = parseOrFail(text);
    CHECK(printGraph(*parsed) == text);
    std::vector<Node *> nodes = parsed->topologicalOrder();
    REQUIRE(nodes.size() == 2);
    CHECK(sameBits(getFloat(nodes[0]->attrs(), "value"), value));
    const std::vector<double> &list = getFloats(nodes[1]->attrs(), "value");
    REQUIRE(list.size() == 2);
    CHECK(sameBits(list[0], value));
    CHECK(sameBits(list[1], -value));
  }

  SECTION("nan prints as nan and reads back as nan") {
    Graph graph("nan");
    Value *x = *graph.addInput("x", t(DType::F32, {2}));
    Value *padded = *graph.addNode(OpKind::Pad, {x},
                                   {{"low", std::vector<int64_t>{1}},
                                    {"high", std::vector<int64_t>{0}},
                                    {"value", -std::nan("")}});
    REQUIRE(graph.addOutput("y", padded).has_value());
    std::string text = printGraph(graph);
    CHECK(text.find("value = nan}") != std::string::npos);
    std::unique_ptr<Graph> parsed = parseOrFail(text);
    CHECK(std::isnan(getFloat(parsed->nodes()[0]->attrs(), "value")));
    CHECK(printGraph(*parsed) == text);
  }
}

TEST_CASE("the parser reads what the printer never writes", "[ir][parser]") {
  SECTION("comments, any layout, named results, ints for floats, empty braces") {
    std::unique_ptr<Graph> graph = parseOrFail(R"(// leading comment
graph @"my graph" {   // trailing comment
  input %x : f32 [ 2 , 3 ]
  %h: f32[2,3] = clamp(%x) {max = 6, min = -1}
  %y: f32[2,3] = relu(%h) {}
  %z: f32[2,3] = constant() {dtype = f32, shape = [2, 3], value = [1, 2, 3, 4, 5, 6e0]}
  output "out\"put" = %y
  output "z" = %z
})");
    CHECK(printGraph(*graph) == "graph @\"my graph\" {\n"
                                "  input %x: f32[2,3]\n"
                                "  %0: f32[2,3] = clamp(%x) {max = 6.0, min = -1.0}\n"
                                "  %1: f32[2,3] = relu(%0)\n"
                                "  %2: f32[2,3] = constant() {dtype = f32, shape = [2, 3], value = "
                                "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}\n"
                                "  output \"out\\\"put\" = %1\n"
                                "  output \"z\" = %2\n"
                                "}\n");
  }
  SECTION("empty lists take their kind from the schema") {
    std::unique_ptr<Graph> graph = parseOrFail(R"(graph @g {
  %0: f32[] = constant() {dtype = f32, shape = [], value = [2.5]}
  %1: f32[] = transpose(%0) {perm = []}
  output "y" = %1
})");
    const Node &transpose = *graph->topologicalOrder()[1];
    CHECK(transpose.attrs().at("perm").index() == Attr(std::vector<int64_t>{}).index());
    CHECK(getInts(transpose.attrs(), "perm").empty());
    // An empty Floats list: zero values for zero elements.
    std::unique_ptr<Graph> empty = parseOrFail(
        "graph @g {\n  %0: f32[0] = constant() {dtype = f32, shape = [0], value = []}\n}\n");
    const Node &constant = *empty->nodes()[0];
    CHECK(constant.attrs().at("value").index() == Attr(std::vector<double>{}).index());
    CHECK(printGraph(*empty) ==
          "graph @g {\n  %0: f32[0] = constant() {dtype = f32, shape = [0], value = []}\n}\n");
  }
  SECTION("string escapes decode and re-encode") {
    std::unique_ptr<Graph> graph = parseOrFail(
        "graph @g {\n  input %x: f32[1]\n  output \"a\\tb\\\\c\\x01\\n\" = %x\n}\n");
    CHECK(graph->outputs()[0].name == std::string("a\tb\\c\x01\n"));
    CHECK(printGraph(*graph).find("output \"a\\tb\\\\c\\x01\\n\" = %x") != std::string::npos);
  }
  SECTION("nodes carry their op name's location") {
    std::unique_ptr<Graph> graph = parseOrFail("graph @g {\n input %x: f32[1]\n\n   %r: "
                                               "f32[1] =   neg(%x)\n output \"y\" = %r }");
    const Location &where = graph->nodes()[0]->location();
    CHECK(where.str() == "test.kir:4:19");
  }
  SECTION("firstLine shifts every line") {
    auto graph = parseGraph("graph @g {\n  %0: f32[] = bogus()\n}\n", "chunk.kir", 40);
    REQUIRE_FALSE(graph.has_value());
    CHECK(graph.error().str() == "chunk.kir:41:15: unknown op 'bogus'");
  }
}

TEST_CASE("parse errors say what was expected, at the offending token", "[ir][parser]") {
  CHECK(parseError("") == "1:1: expected 'graph' at the start of the input, got end of input");
  CHECK(parseError("  // only a comment\n") ==
        "2:1: expected 'graph' at the start of the input, got end of input");
  CHECK(parseError("graph g {}") ==
        "1:7: expected a graph name such as @main after 'graph', got 'g'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = conv3d(%x)\n}") ==
        "3:16: unknown op 'conv3d'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = relu(%7)\n}") ==
        "3:21: use of undefined value %7");
  // A value may not be used before its definition, even if defined later.
  CHECK(parseError("graph @g {\n  %0: f32[2] = neg(%1)\n  %1: f32[2] = iota() {axis = 0, "
                   "dtype = f32, shape = [2]}\n}") == "2:20: use of undefined value %1");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %a: f32[2] = relu(%x)\n"
                   "  %a: f32[2] = neg(%x)\n}") == "4:3: redefinition of value %a");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  param %x: f32[3]\n}") ==
        "3:9: redefinition of value %x");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  input %x: f32[2]\n}") ==
        "3:9: redefinition of value %x");
  CHECK(parseError("graph @g {\n  input %0: f32[2]\n}") ==
        "2:9: expected an input name such as %x after 'input', got '%0'");
  CHECK(parseError("graph @g {\n  input %x: f32[2,\n}") ==
        "3:1: expected a dimension size in the tensor type, got '}'");
  CHECK(parseError("graph @g {\n  input %x: f32(2)\n}") ==
        "2:16: expected '[' after 'f32' in a tensor type, got '('");
  CHECK(parseError("graph @g {\n  input %x: f32[2 3]\n}") ==
        "2:19: expected ',' or ']' after a dimension size, got '3'");
  CHECK(parseError("graph @g {\n  input %x: f32[-2]\n}") ==
        "2:17: dimension size must be >= 0, got -2");
  CHECK(parseError("graph @g {\n  input %x: f31[2]\n}") ==
        "2:13: unknown dtype 'f31' (known: f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, i8, "
        "bool)");
  CHECK(parseError("graph @g {\n  input %x: f32[1048576,1048576,1048576]\n}") ==
        "2:33: tensor type is too large: more than 2^53 elements (zero-size dimensions aside)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = relu(%x)\n") ==
        "4:1: expected 'input', 'param', 'output', a value definition such as %0 or '}', got end "
        "of input");
  CHECK(parseError("graph @g {\n  input %x: f32[1,1,4,4]\n  %0: f32[1,1,2,2] = max_pool2d(%x) "
                   "{kernel = [2, 2], stride = [2, 2]\n  output \"y\" = %0\n}") ==
        "4:3: expected ',' or '}' after attribute, got 'output'");
  CHECK(parseError("graph @g {\n  input %x: f32[1,1,4,4]\n  input %w: f32[1,1,1,1]\n"
                   "  %0: f32[1,1,4,4] = conv2d(%x, %w) {stride = \"1\"}\n}") ==
        "4:47: attribute 'stride' of conv2d expects ints, got a string");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = cast(%x) {dtype = 3}\n}") ==
        "3:34: attribute 'dtype' of cast expects a dtype, got an int");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = softmax(%x) {axis = 1.0}\n}") ==
        "3:36: attribute 'axis' of softmax expects an int, got a float");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = reduce_sum(%x) {axes = [0, "
                   "true]}\n}") ==
        "3:43: attribute 'axes' of reduce_sum expects ints: each element must be an int, got a "
        "bool");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = cast(%x) {dtype = f33}\n}") ==
        "3:34: unknown dtype 'f33' (known: f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, i8, "
        "bool)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = softmax(%x) {axes = 0}\n}") ==
        "3:29: unknown attribute 'axes' of softmax (known: axis)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = relu(%x) {alpha = 0.1}\n}") ==
        "3:26: unknown attribute 'alpha': relu has no attributes");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = softmax(%x) {axis = 0, axis = "
                   "0}\n}") == "3:39: duplicate attribute 'axis'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = cast(%x)\n}") ==
        "3:16: cast: missing required attribute 'dtype' (the result dtype)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  input %w: f32[3]\n"
                   "  %0: f32[2] = add(%x, %w)\n}") ==
        "4:16: add: cannot broadcast f32[2] and f32[3]");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = add(%x)\n}") ==
        "3:16: add: expects 2 operands, got 1");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[3] = relu(%x)\n}") ==
        "3:7: declared type f32[3] but relu infers f32[2]");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: i32[2] = relu(%x)\n}") ==
        "3:7: declared type i32[2] but relu infers f32[2]");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = relu(%x %x)\n}") ==
        "3:24: expected ',' or ')' after operand, got '%x'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = relu(%x,)\n}") ==
        "3:24: expected an operand after ',', got ')'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  output \"y\" = %x\n  output \"y\" = %x\n}") ==
        "4:10: output name 'y' is already used");
  CHECK(parseError("graph @g {\n  output \"y\" = %3\n}") == "2:16: use of undefined value %3");
  CHECK(parseError("graph @g {\n  output y = %3\n}") ==
        "2:10: expected an output name string such as \"out\" after 'output', got 'y'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  output \"y\" = %x\n}\n}") ==
        "5:1: expected end of input after the graph's closing '}', got '}'");
  CHECK(parseError("graph @g {\n}\ngraph @h {\n}\n") ==
        "3:1: expected end of input after the graph's closing '}', got 'graph'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  output \"y = %x\n}") ==
        "3:10: unterminated string");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  output \"y\\q\" = %x\n}") ==
        "3:12: unknown escape '\\q' in string (known: \\\" \\\\ \\n \\t \\xHH)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  output \"y\\x4\" = %x\n}") ==
        "3:12: expected two hex digits after '\\x' in string");
  CHECK(parseError("graph @g {\n  input %x: f32[2] $\n}") == "2:20: unexpected character '$'");
  // Found by the fuzzer: a quoted graph name's errors had no line.
  CHECK(parseError("graph @\"a %b)\n}") == "1:8: unterminated string");
  CHECK(parseError("graph @\"a\\z\" {\n}") ==
        "1:10: unknown escape '\\z' in string (known: \\\" \\\\ \\n \\t \\xHH)");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %1a: f32[2] = neg(%x)\n}") ==
        "3:3: invalid name '%1a': a name is a number or starts with a letter or '_'");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = clamp(%x) {min = 1e999, max "
                   "= 2}\n}") == "3:33: number 1e999 is out of the range of f64");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = softmax(%x) {axis = "
                   "99999999999999999999}\n}") ==
        "3:36: integer 99999999999999999999 does not fit in 64 bits");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = clamp(%x) {min = 1., max = "
                   "2}\n}") == "3:35: expected a digit after '.' in a number");
  CHECK(parseError("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = clamp(%x) {min = -x}\n}") ==
        "3:33: attribute 'min' of clamp expects a float, got '-'");
  CHECK(parseError("graph @g {\n  input %x: f32[2] / comment\n}") ==
        "2:20: expected 'input', 'param', 'output', a value definition such as %0 or '}', got "
        "'/'");
}

TEST_CASE("errors from shape inference keep their notes", "[ir][parser]") {
  auto graph = parseGraph("graph @g {\n  input %x: f32[2]\n  input %w: f32[3]\n"
                          "  %0: f32[2] = add(%x, %w)\n}\n",
                          "bad.kir");
  REQUIRE_FALSE(graph.has_value());
  CHECK(graph.error().str() == "bad.kir:4:16: add: cannot broadcast f32[2] and f32[3]\n"
                               "  note: add operand types: (f32[2], f32[3])");
}
