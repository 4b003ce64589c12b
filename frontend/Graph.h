// kiln::Graph: the DSL's graph builder. It owns an ir::Graph, the parameter
// values (with a trainable flag each), layer name scopes, and the first error
// of any DSL call.
#pragma once

#include "frontend/ShapeSpec.h"
#include "frontend/Tensor.h"
#include "ir/graph/Graph.h"
#include "ir/graph/Interpreter.h"
#include "support/HostTensor.h"

#include <memory>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <vector>

namespace kiln {

using ir::NamedTensors;

/// Builds a model. Every DSL call records the caller's std::source_location.
/// A failing call does not throw and does not abort: the Graph keeps the first
/// error (its message names the op, the shapes and the user's file:line), the
/// call returns a poisoned Tensor, and finalize() reports the error.
///
/// A Graph is neither copyable nor movable: Tensors point at it.
class Graph {
public:
  /// `seed` drives every parameter initializer (see paramRng()).
  explicit Graph(std::string name = "main", uint64_t seed = 0);
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  // ---- Building -------------------------------------------------------------------------------

  /// A graph input, bound by `name` at run time. Input names are not scoped.
  /// A dim may be a size symbol, kiln::dim("N", 1, 256): the graph declares it
  /// on first use, and every use of the name is the same symbol.
  Tensor input(std::string name, ShapeSpec shape, DType dtype = DType::F32,
               std::source_location loc = std::source_location::current());

  /// A parameter named `<scope>.<name>` with its initial value. A frozen
  /// parameter (trainable = false) is data: training leaves it alone and
  /// passes may treat it as a constant.
  Tensor param(std::string name, HostTensor initialValue, bool trainable = true,
               std::source_location loc = std::source_location::current());

  /// Marks `value` as the graph output `name`.
  void output(std::string name, Tensor value,
              std::source_location loc = std::source_location::current());

  /// Adds one op node. Operands must be ok Tensors of this graph; a poisoned
  /// operand makes this a no-op returning a poisoned Tensor. Ops.h is the
  /// friendly face of this function.
  Tensor apply(ir::OpKind kind, const std::vector<Tensor> &operands, ir::AttrMap attrs,
               const std::source_location &loc);

  /// Records `error` (located at `loc` unless it already has a location) if it
  /// is the first, and returns a poisoned Tensor.
  Tensor fail(Error error, const std::source_location &loc);

  // ---- Name scopes ----------------------------------------------------------------------------

  /// While alive, parameters are named `<outer>.<name>.<param>`. Layers open
  /// one with their own name.
  class [[nodiscard]] NameScope {
  public:
    NameScope(const NameScope &) = delete;
    NameScope &operator=(const NameScope &) = delete;
    ~NameScope();

  private:
    friend class Graph;
    explicit NameScope(Graph *graph) : graph_(graph) {}
    Graph *graph_;
  };
  NameScope nameScope(std::string name);

  /// `name` prefixed with the open scopes: "block1.conv2d.weight".
  std::string scopedName(std::string_view name) const;

  /// Reserves the first of `base`, `base_1`, `base_2`, ... not yet used in the
  /// current scope and returns it (without the scope prefix).
  std::string uniqueName(std::string_view base);
  /// Reserves an explicitly chosen name in the current scope. Returns false
  /// when it was already taken (the caller reports the clash).
  bool reserveName(std::string_view name);

  // ---- Parameters -----------------------------------------------------------------------------

  /// The generator for parameter `fullName`: derived from the graph's seed and
  /// the name alone, so a parameter's initial value does not depend on the
  /// order in which layers are built.
  Rng paramRng(std::string_view fullName) const;
  uint64_t seed() const { return seed_; }

  /// Every parameter's current value, by full name.
  const NamedTensors &paramValues() const { return paramValues_; }
  bool isTrainable(std::string_view fullName) const;
  /// Names of the trainable parameters, in creation order.
  std::vector<std::string> trainableParamNames() const;
  /// Names of the frozen parameters, in creation order.
  std::vector<std::string> frozenParamNames() const;

  /// Replaces a parameter's value; its dtype and shape must match.
  Expected<void> setParamValue(std::string_view fullName, HostTensor value);
  /// Replaces several parameters (e.g. loaded from a safetensors file). Every
  /// name must be a parameter; with `requireAll`, every parameter must be given.
  Expected<void> loadParamValues(const NamedTensors &values, bool requireAll = true);
  /// Loads a PyTorch state dict saved as safetensors onto the nn layers' parameters, PyTorch's
  /// names and layouts mapped onto kiln's (frontend/io/TorchStateDict.h): name the DSL's
  /// layers as the PyTorch module's attributes. All or nothing; the error names every tensor
  /// it could not place and every parameter left without a value.
  Expected<void> loadTorchStateDict(const std::string &safetensorsPath);

  // ---- Results --------------------------------------------------------------------------------

  const std::string &name() const { return ir_->name(); }
  /// Unique among all Graphs of the process, never reused (unlike an
  /// address): layers use it to know which graph their parameters live in.
  uint64_t id() const { return id_; }
  const ir::Graph &ir() const { return *ir_; }
  /// Mutable IR for passes that rewrite the finished graph. Tensors still held
  /// may dangle after a pass erases their nodes.
  ir::Graph &ir() { return *ir_; }

  /// The first error of any DSL call, if one failed.
  const std::optional<Error> &error() const { return firstError_; }
  bool hasError() const { return firstError_.has_value(); }
  /// How many DSL calls failed (later failures are not kept: they usually
  /// follow from the first).
  size_t errorCount() const { return errorCount_; }

  /// Checks the finished graph: the first DSL error, at least one output, and
  /// the IR verifier. Everything that consumes a Graph (evaluate, compile)
  /// calls this first.
  Expected<void> finalize() const;

private:
  friend class NameScope;

  std::unique_ptr<ir::Graph> ir_;
  uint64_t id_;
  uint64_t seed_;
  NamedTensors paramValues_;
  std::vector<std::string> paramOrder_;
  std::set<std::string, std::less<>> frozen_;
  std::vector<std::string> scopes_;
  std::set<std::string, std::less<>> usedNames_;
  std::optional<Error> firstError_;
  size_t errorCount_ = 0;
};

} // namespace kiln
