// The pass manager: named graph passes, a pipeline parsed from a list of names,
// verification between passes and printing after each one.
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/PrecisionPolicy.h"
#include "support/Error.h"

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::passes {

/// A graph-to-graph transformation.
class Pass {
public:
  virtual ~Pass() = default;
  /// The kebab-case name used in pipelines: "dce", "cse", "fold", "simplify", "decompose".
  virtual std::string_view name() const = 0;
  /// One line on what the pass does and why it exists.
  virtual std::string_view description() const = 0;
  /// A fixed-point pass is rerun until it reports no change.
  virtual bool runsToFixedPoint() const { return false; }
  /// Rewrites the graph; returns whether anything changed.
  virtual Expected<bool> run(ir::Graph &graph) = 0;
};

/// The settings of the registered passes that take any (`kiln-opt --precision`).
struct PassOptions {
  /// The policy of the "precision" pass.
  PrecisionPolicy precision = PrecisionPolicy::Fp32;
};

/// Every registered pass by name, in a stable order.
std::vector<std::string_view> registeredPassNames();
/// Creates a registered pass, or an error listing the known names.
Expected<std::unique_ptr<Pass>> createPass(std::string_view name, const PassOptions &options = {});

class PassManager {
public:
  void add(std::unique_ptr<Pass> pass);
  /// Parses "dce,cse,fold" into passes (configured by `options`) and adds them.
  Expected<void> addPipeline(std::string_view commaSeparatedNames,
                             const PassOptions &options = {});

  /// Prints the graph after every pass (with a header naming the pass) to `out`.
  void setPrintAfterEach(std::ostream *out) { printAfterEach_ = out; }
  /// Verifies the graph after every pass (on by default); a failure names the pass.
  void setVerifyEach(bool verify) { verifyEach_ = verify; }

  /// Runs the pipeline in order. Returns whether any pass changed the graph.
  Expected<bool> run(ir::Graph &graph);

private:
  std::vector<std::unique_ptr<Pass>> passes_;
  std::ostream *printAfterEach_ = nullptr;
  bool verifyEach_ = true;
};

} // namespace kiln::passes
