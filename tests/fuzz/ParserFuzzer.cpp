// libFuzzer target for the graph IR parser: any input must either fail with a
// located ParseError or parse into a graph whose printed text is a fixed point
// of print(parse(.)) and which the verifier accepts.
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "parser fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto graph = kiln::ir::parseGraph(text, "fuzz.kir");
  if (!graph) {
    const kiln::Error &error = graph.error();
    if (error.code() != kiln::ErrorCode::ParseError || !error.location() ||
        error.location()->line == 0)
      fail("an error that is not a located ParseError", error.str());
    return 0;
  }
  std::string printed = kiln::ir::printGraph(**graph);
  auto reparsed = kiln::ir::parseGraph(printed, "printed.kir");
  if (!reparsed)
    fail("printed text does not parse", reparsed.error().str() + "\n" + printed);
  std::string again = kiln::ir::printGraph(**reparsed);
  if (again != printed)
    fail("print(parse(print(g))) != print(g)", printed + "\n---- reprinted ----\n" + again);
  // Parsing builds through the Graph API, so only graph-wide rules (an output
  // is required) may fail verification.
  if (!(*graph)->outputs().empty()) {
    auto verified = kiln::ir::verifyGraph(**graph);
    if (!verified)
      fail("a parsed graph fails the verifier", verified.error().str() + "\n" + printed);
  }
  return 0;
}
