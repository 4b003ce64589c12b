// Every op in the table must have a reference test: a test case tagged
// [op:<name>] (runOp checks that a test runs only ops it is tagged with). A
// new Ops.def row without one fails here.
#include "ir/ReferenceTestUtil.h"

#include <set>

using namespace kiln;
using namespace kiln::ir;

TEST_CASE("every op has a tagged reference test", "[reference][coverage]") {
  std::set<std::string> tags;
  for (const Catch::TestCase &test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    tags.insert(test.tags.begin(), test.tags.end());
  REQUIRE(allOps().size() == static_cast<size_t>(kNumOps));
  for (const OpInfo &info : allOps()) {
    INFO("op " << info.name << " has no test case tagged [op:" << info.name << "]");
    CHECK(tags.count(fmt::format("op:{}", info.name)) == 1);
  }
  // And no tag names an op that does not exist (a typo would hide a gap).
  for (const std::string &tag : tags) {
    if (tag.rfind("op:", 0) != 0)
      continue;
    INFO("tag [" << tag << "] names no op");
    CHECK(opKindFromName(std::string_view(tag).substr(3)).has_value());
  }
}
