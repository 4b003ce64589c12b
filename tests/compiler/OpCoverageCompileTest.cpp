// One graph that uses every op of the op table, compiled and checked against
// the reference: a new row in ir/graph/Ops.def fails this test until the op is
// added to EveryOpGraph.cpp (and to the per-family tests beside it).
#include "CompileTestUtil.h"
#include "EveryOpGraph.h"

#include <set>

namespace kiln::test {
namespace {

TEST_CASE("one graph using every op of the op table compiles and matches the reference",
          "[compiler]") {
  CompileCase c("every_op");
  buildEveryOpGraph(c);
  REQUIRE(c.graph().finalize());
  std::set<ir::OpKind> used;
  for (const ir::Node *node : c.graph().ir().nodes())
    used.insert(node->kind());
  for (const ir::OpInfo &op : ir::allOps()) {
    INFO("op " << op.name << " is in the op table but not in this graph");
    CHECK(used.count(op.kind) == 1);
  }
  c.check();
}

} // namespace
} // namespace kiln::test
