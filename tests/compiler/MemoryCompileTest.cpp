// Memory planning end to end: the arena of the example models is smaller than
// their buffers laid end to end, and a long chain of materialized values
// reuses a couple of slots (in place or after their last use) and still
// computes the right thing.
#include "CompileTestUtil.h"

#include "examples/models/FashionMnistCnn.h"
#include "examples/models/Mlp.h"

#include <fmt/format.h>

namespace kiln::test {
namespace {

TEST_CASE("the CNN and the MLP reuse arena memory", "[compiler]") {
  std::string which = GENERATE(std::string("cnn"), std::string("mlp"));
  INFO("model " << which);
  Graph graph(which, 3);
  if (which == "cnn")
    examples::buildFashionMnistCnn(graph, {.batch = 4});
  else
    examples::buildMlp(graph, {.batch = 4});
  REQUIRE(graph.finalize());
  CompiledModel compiled = compileOrFail(graph.ir());
  MemoryStats stats = compiled.memoryStats();
  INFO("arena " << stats.arenaBytes << " bytes, unplanned " << stats.unplannedBytes << " bytes");
  CHECK(stats.arenaBytes > 0);
  CHECK(stats.arenaBytes < stats.unplannedBytes);
  // The CNN's largest intermediate (the first conv, 4 x 32 x 26 x 26 f32)
  // must fit, so the arena cannot be smaller than that.
  if (which == "cnn")
    CHECK(stats.arenaBytes >= 4 * 32 * 26 * 26 * 4);
}

TEST_CASE("a chain of 10 materialized elementwise steps reuses memory", "[compiler]") {
  CompileCase c("chain");
  constexpr int64_t kRows = 64, kColumns = 257;
  constexpr int64_t kBytes = kRows * kColumns * 4;
  Tensor h = c.input("x", {kRows, kColumns});
  // Each h is read by two groups (its row max and the next step), so it is
  // materialized; the next step is its last reader and writes over it in
  // place (no scalar constant in the step: that would make it non-elementwise).
  for (int step = 0; step < 10; ++step) {
    Tensor shift = reduceMax(h, {1}, true);
    h = exp(h - shift) + sin(h);
  }
  c.output("y", h);
  REQUIRE(c.graph().finalize());
  CompiledModel compiled = compileOrFail(c.graph().ir());
  MemoryStats stats = compiled.memoryStats();
  INFO("arena " << stats.arenaBytes << " bytes, unplanned " << stats.unplannedBytes << " bytes");
  // 9 intermediates of kBytes each (the last step writes the output) plus the
  // row maxima: laid end to end they need at least 9 * kBytes; planned with
  // each step in place over the one before, one slot and the small row
  // buffers suffice.
  CHECK(compiled.numKernels() == 20);
  CHECK(stats.unplannedBytes >= 9 * kBytes);
  CHECK(stats.arenaBytes < 2 * kBytes);
  c.check();
}

TEST_CASE("graph outputs along a chain are not reused as scratch", "[compiler]") {
  CompileCase c("chain_outputs");
  Tensor h = c.input("x", {17, 65});
  // Every step is an output and feeds the next: none may be overwritten.
  for (int step = 0; step < 10; ++step) {
    h = step % 2 == 0 ? tanh(h) * 1.5 : h * h - 0.5;
    c.output(fmt::format("step{}", step), h);
  }
  c.check();
}

} // namespace
} // namespace kiln::test
