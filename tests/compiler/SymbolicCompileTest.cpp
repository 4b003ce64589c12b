// compile() refuses a graph with symbolic dims until kernels take sizes at run
// time (docs/dynamic-shapes.md, part 2), and compiles it once specialized.
#include "CompileTestUtil.h"

#include "ir/graph/Specialize.h"

namespace kiln::test {
namespace {

TEST_CASE("compile refuses a symbolic graph and compiles it specialized", "[compile][symbolic]") {
  Graph graph("mlp");
  Tensor x = graph.input("x", {kiln::dim("N", 1, 64), 4});
  Tensor w = graph.param("w", HostTensor::fromDoubles(DType::F32, {4, 3},
                                                      std::vector<double>(12, 0.5)));
  graph.output("y", relu(matmul(x, w)));
  REQUIRE(graph.finalize().has_value());

  auto refused = compile(graph.ir());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == ErrorCode::Unsupported);
  CHECK(refused.error().message() ==
        "graph @mlp has symbolic dims (N in [1, 64]): the compiler takes static sizes; "
        "specialize the graph at the sizes to run (ir::specialize) (dynamic compile not built "
        "yet, docs/dynamic-shapes.md)");

  auto specialized = ir::specialize(graph.ir(), {{"N", 3}});
  REQUIRE(specialized.has_value());
  CompileOptions options;
  options.target = TargetKind::Cpu;
  auto compiled = compile(**specialized, options);
  if (!compiled)
    FAIL(compiled.error().str());
}

} // namespace
} // namespace kiln::test
