// The pass manager: registry, pipeline parsing, fixed-point iteration,
// verification after each pass and printing after each pass.
#include "PassTestUtil.h"

#include "passes/graph/GraphPasses.h"

#include <sstream>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

/// add(exp(x), exp(x)) plus an unused neg: cse merges the exps, dce drops the neg.
std::unique_ptr<Graph> smallGraph() {
  auto graph = std::make_unique<Graph>("small");
  Value *x = *graph->addInput("x", tensorType(DType::F32, {3}));
  Value *a = node(*graph, OpKind::Exp, {x});
  Value *b = node(*graph, OpKind::Exp, {x});
  node(*graph, OpKind::Neg, {x});
  REQUIRE(graph->addOutput("y", node(*graph, OpKind::Add, {a, b})));
  return graph;
}

/// Test-only: points the first add's operand at a value of another shape, so
/// the stored result type no longer matches what the operands give.
class CorruptingPass final : public Pass {
public:
  std::string_view name() const override { return "test-corrupt"; }
  std::string_view description() const override { return "breaks the graph on purpose"; }
  Expected<bool> run(Graph &graph) override {
    Value *wide = *graph.addInput("wide", tensorType(DType::F32, {5}));
    for (Node *n : graph.nodes())
      if (n->kind() == OpKind::Add) {
        n->setOperand(0, wide);
        return true;
      }
    return false;
  }
};

/// Test-only: claims a change every time, so it never reaches a fixed point.
class NeverSettles final : public Pass {
public:
  std::string_view name() const override { return "test-never-settles"; }
  std::string_view description() const override { return "always reports a change"; }
  bool runsToFixedPoint() const override { return true; }
  Expected<bool> run(Graph &) override {
    ++runs;
    return true;
  }
  int runs = 0;
};

/// Test-only: reports change twice, then settles; counts its runs.
class SettlesAfterTwo final : public Pass {
public:
  explicit SettlesAfterTwo(int *runs) : runs_(runs) {}
  std::string_view name() const override { return "test-settles"; }
  std::string_view description() const override { return "changes twice"; }
  bool runsToFixedPoint() const override { return true; }
  Expected<bool> run(Graph &) override { return ++*runs_ <= 2; }

private:
  int *runs_;
};

class Failing final : public Pass {
public:
  std::string_view name() const override { return "test-fails"; }
  std::string_view description() const override { return "returns an error"; }
  Expected<bool> run(Graph &) override {
    return makeError(ErrorCode::Unsupported, "cannot handle this graph");
  }
};

/// Test-only: fails with an error that has a location and two notes.
class FailingWithNotes final : public Pass {
public:
  std::string_view name() const override { return "test-fails-noted"; }
  std::string_view description() const override { return "returns an error with notes"; }
  Expected<bool> run(Graph &) override {
    return std::unexpected(
        Error(ErrorCode::ShapeMismatch, "operand shapes disagree", Location{"model.cpp", 42, 7})
            .withNote("lhs is f32[3]")
            .withNote("rhs is f32[4]"));
  }
};

} // namespace

TEST_CASE("the registry lists every pass in a stable order", "[passes][manager]") {
  std::vector<std::string_view> names = registeredPassNames();
  CHECK(names == std::vector<std::string_view>{"autodiff", "cse", "dce", "decompose", "fold",
                                               "kmajor", "layout", "layout-cpu", "precision",
                                               "simplify", "split-concat", "winograd"});
  for (std::string_view name : names) {
    auto pass = createPass(name);
    REQUIRE(pass);
    CHECK((*pass)->name() == name);
    CHECK_FALSE((*pass)->description().empty());
  }
  CHECK((*createPass("simplify"))->runsToFixedPoint());
  CHECK_FALSE((*createPass("dce"))->runsToFixedPoint());
}

TEST_CASE("an unknown pass name lists the known ones", "[passes][manager]") {
  auto pass = createPass("cs");
  REQUIRE_FALSE(pass);
  CHECK(pass.error().code() == ErrorCode::NotFound);
  CHECK(pass.error().message() ==
        "unknown pass 'cs'; known passes: autodiff, cse, dce, decompose, fold, kmajor, layout, "
        "layout-cpu, precision, simplify, split-concat, winograd");
}

TEST_CASE("addPipeline parses names and rejects bad ones without adding any", "[passes][manager]") {
  PassManager manager;
  auto bad = manager.addPipeline("cse,bogus,dce");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() ==
        "unknown pass 'bogus'; known passes: autodiff, cse, dce, decompose, fold, kmajor, layout, "
        "layout-cpu, precision, simplify, split-concat, winograd");

  for (std::string_view pipeline : {"", "cse,,dce", "cse,", ",dce", " , "}) {
    INFO("pipeline '" << pipeline << "'");
    auto empty = manager.addPipeline(pipeline);
    REQUIRE_FALSE(empty);
    CHECK(empty.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(empty.error().message(), Catch::StartsWith("empty pass name in pipeline"));
  }

  // Nothing was added by the failed calls: running changes nothing.
  auto graph = smallGraph();
  auto changed = manager.run(*graph);
  REQUIRE(changed);
  CHECK_FALSE(*changed);
  CHECK(graph->numNodes() == 4);

  REQUIRE(manager.addPipeline(" cse , dce"));
  changed = manager.run(*graph);
  REQUIRE(changed);
  CHECK(*changed);
  CHECK(nodeKinds(*graph) == std::vector<std::string>{"exp", "add"});
}

TEST_CASE("print-after-each prints a header and the IR after every pass", "[passes][manager]") {
  auto graph = smallGraph();
  PassManager manager;
  REQUIRE(manager.addPipeline("cse,dce"));
  std::ostringstream out;
  manager.setPrintAfterEach(&out);
  REQUIRE(manager.run(*graph));
  std::string text = out.str();
  size_t cse = text.find("// -----// IR after cse //----- //\ngraph @small {\n");
  size_t dce = text.find("// -----// IR after dce //----- //\ngraph @small {\n");
  REQUIRE(cse != std::string::npos);
  REQUIRE(dce != std::string::npos);
  CHECK(cse < dce);
  // After cse the dead neg is still there; after dce it is gone.
  CHECK(text.substr(cse, dce - cse).find("neg(") != std::string::npos);
  CHECK(text.substr(dce).find("neg(") == std::string::npos);
  CHECK(text.substr(dce).find("exp(") != std::string::npos);
}

TEST_CASE("verify-each catches a pass that corrupts the graph and names it", "[passes][manager]") {
  auto graph = smallGraph();
  PassManager manager;
  REQUIRE(manager.addPipeline("cse"));
  manager.add(std::make_unique<CorruptingPass>());
  REQUIRE(manager.addPipeline("dce"));
  auto result = manager.run(*graph);
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == ErrorCode::VerifyError);
  CHECK_THAT(result.error().message(), Catch::StartsWith("invalid IR after pass 'test-corrupt': "));
  CHECK_THAT(result.error().message(), Catch::Contains("add"));
  REQUIRE(result.error().notes().size() >= 1);
  CHECK(result.error().notes().back() == "pipeline stopped at pass 'test-corrupt'");

  // With verification off the same corruption goes unnoticed by the manager.
  auto other = smallGraph();
  PassManager unchecked;
  unchecked.add(std::make_unique<CorruptingPass>());
  unchecked.setVerifyEach(false);
  CHECK(unchecked.run(*other));
  CHECK_FALSE(verifyGraph(*other));
}

TEST_CASE("a pass's own error names the pass", "[passes][manager]") {
  auto graph = smallGraph();
  PassManager manager;
  manager.add(std::make_unique<Failing>());
  auto result = manager.run(*graph);
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == ErrorCode::Unsupported);
  CHECK(result.error().message() == "in pass 'test-fails': cannot handle this graph");
  CHECK_FALSE(result.error().location());
  CHECK(result.error().notes() ==
        std::vector<std::string>{"pipeline stopped at pass 'test-fails'"});
}

TEST_CASE("fixed-point passes rerun until they settle, within a cap", "[passes][manager]") {
  auto graph = smallGraph();
  int runs = 0;
  PassManager settles;
  settles.add(std::make_unique<SettlesAfterTwo>(&runs));
  auto changed = settles.run(*graph);
  REQUIRE(changed);
  CHECK(*changed);
  CHECK(runs == 3);

  auto never = std::make_unique<NeverSettles>();
  NeverSettles *raw = never.get();
  PassManager manager;
  manager.add(std::move(never));
  auto result = manager.run(*graph);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() ==
        "pass 'test-never-settles' did not reach a fixed point after 32 iterations");
  CHECK(raw->runs == 32);
}

TEST_CASE("a pass's error keeps its location and notes", "[passes][manager]") {
  auto graph = smallGraph();
  PassManager manager;
  manager.add(std::make_unique<FailingWithNotes>());
  auto result = manager.run(*graph);
  REQUIRE_FALSE(result);
  const Error &error = result.error();
  CHECK(error.code() == ErrorCode::ShapeMismatch);
  CHECK(error.message() == "in pass 'test-fails-noted': operand shapes disagree");
  REQUIRE(error.location());
  CHECK(error.location()->str() == "model.cpp:42:7");
  CHECK(error.notes() == std::vector<std::string>{"lhs is f32[3]", "rhs is f32[4]",
                                                  "pipeline stopped at pass 'test-fails-noted'"});
}

TEST_CASE("a decompose pass can be limited to named ops", "[passes][manager]") {
  std::string_view good[] = {"softmax", "layer_norm"};
  CHECK(createDecomposePass(std::span<const std::string_view>(good)));
  std::string_view notComposite[] = {"softmax", "exp"};
  auto bad = createDecomposePass(std::span<const std::string_view>(notComposite));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::StartsWith("decompose: 'exp' is not a composite op; "
                                                      "ops with a decomposition: "));
  CHECK_THAT(bad.error().message(), Catch::Contains("global_avg_pool, softmax, log_softmax") &&
                                        Catch::Contains("hard_swish"));
  std::string_view unknown[] = {"softmaxx"};
  auto missing = createDecomposePass(std::span<const std::string_view>(unknown));
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(), Catch::StartsWith("decompose: 'softmaxx' is not an op"));
  CHECK_FALSE(createDecomposePass(std::span<const std::string_view>()));
}
