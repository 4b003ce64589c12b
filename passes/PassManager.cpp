// The pass manager: the registry of named passes, pipeline parsing, and the
// run loop with fixed-point iteration, verification and printing after each pass.
#include "passes/PassManager.h"

#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "passes/graph/GraphPasses.h"

#include <fmt/format.h>

namespace kiln::passes {

namespace {

/// A fixed-point pass that still reports change after this many runs is
/// oscillating (two rules undoing each other), which is a bug in the pass.
constexpr int kMaxFixedPointIterations = 32;

struct PassEntry {
  std::string_view name;
  std::unique_ptr<Pass> (*create)(const PassOptions &);
};

// Sorted by name, so registeredPassNames() and the "known passes" list in
// errors are stable.
constexpr PassEntry kRegistry[] = {
    {"autodiff", [](const PassOptions &) { return createAutodiffPass(); }},
    {"cse", [](const PassOptions &) { return createCommonSubexpressionEliminationPass(); }},
    {"dce", [](const PassOptions &) { return createDeadCodeEliminationPass(); }},
    {"decompose", [](const PassOptions &) { return createDecomposePass(); }},
    {"fold", [](const PassOptions &) { return createConstantFoldingPass(); }},
    {"kmajor", [](const PassOptions &) { return createKMajorOperandsPass(); }},
    {"layout", [](const PassOptions &) { return createNhwcLayoutPass(); }},
    {"layout-cpu",
     [](const PassOptions &) { return createNhwcLayoutPass(NhwcConvolutions::Chained); }},
    {"precision", [](const PassOptions &o) { return createPrecisionPass(o.precision); }},
    {"simplify", [](const PassOptions &) { return createAlgebraicSimplifyPass(); }},
    {"split-concat", [](const PassOptions &) { return createSplitWideConcatPass(); }},
    {"winograd", [](const PassOptions &) { return createWinogradPass(); }},
};

std::string knownPassList() {
  std::string out;
  for (const PassEntry &entry : kRegistry)
    out += (out.empty() ? "" : ", ") + std::string(entry.name);
  return out;
}

std::string_view trim(std::string_view text) {
  auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

/// Adds the pass's name to an error raised while running or verifying it,
/// keeping its code, location and notes, and appends a note naming the pass.
Error inPass(const Error &error, std::string_view what, std::string_view passName) {
  Error named(error.code(), fmt::format("{} '{}': {}", what, passName, error.message()),
              error.location());
  for (const std::string &note : error.notes())
    named.withNote(note);
  return std::move(named).withNote(fmt::format("pipeline stopped at pass '{}'", passName));
}

} // namespace

std::vector<std::string_view> registeredPassNames() {
  std::vector<std::string_view> names;
  for (const PassEntry &entry : kRegistry)
    names.push_back(entry.name);
  return names;
}

Expected<std::unique_ptr<Pass>> createPass(std::string_view name, const PassOptions &options) {
  for (const PassEntry &entry : kRegistry)
    if (entry.name == name)
      return entry.create(options);
  return makeError(ErrorCode::NotFound,
                   fmt::format("unknown pass '{}'; known passes: {}", name, knownPassList()));
}

void PassManager::add(std::unique_ptr<Pass> pass) {
  KILN_CHECK(pass != nullptr, "adding a null pass");
  passes_.push_back(std::move(pass));
}

Expected<void> PassManager::addPipeline(std::string_view commaSeparatedNames,
                                        const PassOptions &options) {
  // Create every pass first, so a bad name leaves the pipeline unchanged.
  std::vector<std::unique_ptr<Pass>> created;
  size_t position = 0;
  while (true) {
    size_t comma = commaSeparatedNames.find(',', position);
    std::string_view name = trim(commaSeparatedNames.substr(
        position, comma == std::string_view::npos ? std::string_view::npos : comma - position));
    if (name.empty())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("empty pass name in pipeline '{}'; known passes: {}",
                                   commaSeparatedNames, knownPassList()));
    KILN_TRY(auto pass, createPass(name, options));
    created.push_back(std::move(pass));
    if (comma == std::string_view::npos)
      break;
    position = comma + 1;
  }
  for (auto &pass : created)
    add(std::move(pass));
  return {};
}

Expected<bool> PassManager::run(ir::Graph &graph) {
  bool anyChange = false;
  for (const auto &pass : passes_) {
    int iterations = 0;
    while (true) {
      auto changed = pass->run(graph);
      if (!changed)
        return std::unexpected(inPass(changed.error(), "in pass", pass->name()));
      ++iterations;
      anyChange |= *changed;
      if (!*changed || !pass->runsToFixedPoint())
        break;
      if (iterations == kMaxFixedPointIterations)
        return makeError(ErrorCode::Unsupported,
                         fmt::format("pass '{}' did not reach a fixed point after {} iterations",
                                     pass->name(), kMaxFixedPointIterations));
    }
    // Printed before verification, so the IR a broken pass left is visible.
    if (printAfterEach_)
      *printAfterEach_ << "// -----// IR after " << pass->name() << " //----- //\n"
                       << ir::printGraph(graph);
    if (verifyEach_) {
      auto verified = ir::verifyGraph(graph);
      if (!verified)
        return std::unexpected(inPass(verified.error(), "invalid IR after pass", pass->name()));
    }
  }
  return anyChange;
}

} // namespace kiln::passes
