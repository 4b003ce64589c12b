// libFuzzer target for the cleanup passes: a graph that parses and verifies
// must still verify after simplify,cse,fold,dce, and the reference interpreter
// must give the same bits before and after on fixed random inputs.
//
// The passes are documented as exact (docs/passes.md): outputs must match bit
// for bit, the sign of zero included; the one freedom is a NaN's payload, so
// any NaN matches any NaN. Graphs with many elements are skipped so one run
// stays fast under the sanitizers.
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "passes/PassManager.h"
#include "support/HostTensor.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace kiln;

/// Above this many elements in all values together a graph is skipped: the
/// interpreter runs it twice and fold evaluates it once.
constexpr int64_t kMaxTotalElements = int64_t{1} << 12;

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "passes fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

int64_t totalElements(const ir::Graph &graph) {
  int64_t total = 0;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const ir::Value *leaf : *leaves)
      total += leaf->type().numElements();
  for (const ir::Node *node : graph.nodes())
    total += node->type().numElements();
  return total;
}

ir::NamedTensors fixedBindings(const ir::Graph &graph) {
  Rng rng(20240611);
  ir::NamedTensors bindings;
  for (const auto *leaves : {&graph.inputs(), &graph.params()})
    for (const ir::Value *leaf : *leaves)
      bindings.emplace(leaf->name(), HostTensor::randomUniform(leaf->type().dtype,
                                                               leaf->type().shape, rng, -3, 3));
  return bindings;
}

bool sameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

void compareOutputs(const ir::NamedTensors &before, const ir::NamedTensors &after,
                    const std::string &original, const std::string &optimized) {
  auto context = [&] { return original + "\n---- after simplify,cse,fold,dce ----\n" + optimized; };
  if (before.size() != after.size())
    fail("the passes changed the number of outputs", context());
  for (const auto &[name, want] : before) {
    auto found = after.find(name);
    if (found == after.end())
      fail("the passes lost an output", name + "\n" + context());
    const HostTensor &got = found->second;
    if (got.typeStr() != want.typeStr())
      fail("the passes changed an output's type",
           name + ": " + want.typeStr() + " -> " + got.typeStr() + "\n" + context());
    for (int64_t i = 0; i < want.numElements(); ++i)
      if (!sameValue(want.getDouble(i), got.getDouble(i)))
        fail("the passes changed an output value",
             name + "[" + std::to_string(i) + "]: " + std::to_string(want.getDouble(i)) +
                 " -> " + std::to_string(got.getDouble(i)) + "\n" + context());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto graph = ir::parseGraph(text, "fuzz.kir");
  if (!graph || (*graph)->outputs().empty() || !ir::verifyGraph(**graph))
    return 0;
  if (totalElements(**graph) > kMaxTotalElements)
    return 0;
  std::string original = ir::printGraph(**graph);
  ir::NamedTensors bindings = fixedBindings(**graph);
  // A graph whose reference fails (an index out of range) has nothing to
  // compare; the passes must still leave it valid.
  auto before = ir::interpret(**graph, bindings);

  passes::PassManager manager;
  if (auto added = manager.addPipeline("simplify,cse,fold,dce"); !added)
    fail("cannot build the pipeline", added.error().str());
  auto changed = manager.run(**graph);
  if (!changed)
    fail("a pass failed on a verified graph", changed.error().str() + "\n" + original);
  std::string optimized = ir::printGraph(**graph);
  if (auto verified = ir::verifyGraph(**graph); !verified)
    fail("the passes left an invalid graph", verified.error().str() + "\n" + optimized);
  if (!before)
    return 0;
  auto after = ir::interpret(**graph, bindings);
  if (!after)
    fail("the graph fails to run only after the passes",
         after.error().str() + "\n" + original + "\n---- after ----\n" + optimized);
  compareOutputs(*before, *after, original, optimized);
  return 0;
}
