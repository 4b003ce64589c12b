// The dataflow graph IR: Values (graph inputs, parameters, node results) with
// use lists, Nodes (one op each, one result), and the Graph that owns them.
#pragma once

#include "ir/graph/OpTable.h"
#include "support/Error.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::ir {

class Node;
class Graph;

/// One use of a value: operand `operandIndex` of `user`.
struct Use {
  Node *user;
  unsigned operandIndex;
  bool operator==(const Use &) const = default;
};

/// A tensor-valued SSA value.
class Value {
public:
  enum class Kind : uint8_t { Input, Param, Result };

  Kind kind() const { return kind_; }
  const TensorType &type() const { return type_; }
  /// The name of a graph input or parameter; empty for node results.
  const std::string &name() const { return name_; }
  /// The node that computes this value; nullptr for inputs and parameters.
  Node *definingNode() const { return definingNode_; }
  const std::vector<Use> &uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }

private:
  friend class Graph;
  friend class Node;
  Value(Kind kind, TensorType type, std::string name, Node *definingNode)
      : kind_(kind), type_(std::move(type)), name_(std::move(name)), definingNode_(definingNode) {}
  void eraseUse(const Use &use);

  Kind kind_;
  TensorType type_;
  std::string name_;
  Node *definingNode_;
  std::vector<Use> uses_;
};

/// One op application. Its result type was inferred when it was created.
class Node {
public:
  OpKind kind() const { return kind_; }
  const OpInfo &info() const { return opInfo(kind_); }
  std::string_view name() const { return opName(kind_); }
  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(size_t index) const { return operands_.at(index); }
  size_t numOperands() const { return operands_.size(); }
  const AttrMap &attrs() const { return attrs_; }
  Value *result() { return &result_; }
  const Value *result() const { return &result_; }
  const TensorType &type() const { return result_.type(); }
  /// Where the node came from: the user's C++ line or a line of IR text.
  const Location &location() const { return location_; }
  /// Creation order within its graph; unique and never reused.
  uint64_t id() const { return id_; }

  /// Points operand `index` at `value`, keeping both use lists right. The
  /// caller keeps the node's type valid (same operand type, or re-verify).
  void setOperand(size_t index, Value *value);

private:
  friend class Graph;
  Node(OpKind kind, std::vector<Value *> operands, AttrMap attrs, TensorType type,
       Location location, uint64_t id);

  OpKind kind_;
  std::vector<Value *> operands_;
  AttrMap attrs_;
  Value result_;
  Location location_;
  uint64_t id_;
};

/// A named graph output.
struct GraphOutput {
  std::string name;
  Value *value;
};

/// A dataflow graph: named inputs, named parameters (trainable or frozen
/// weights, bound by name at run time), nodes and named outputs.
class Graph {
public:
  explicit Graph(std::string name = "main");
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  const std::string &name() const { return name_; }

  /// Declares a size symbol with its inclusive range (docs/dynamic-shapes.md).
  /// Fails for a name that is not an identifier, a bad range (min < 0 or
  /// min > max) or a name declared before (the error shows both ranges).
  Expected<void> declareSymbol(SizeSymbol symbol);
  /// The declared symbols, in declaration order.
  const std::vector<SizeSymbol> &symbols() const { return symbols_; }
  const SizeSymbol *findSymbol(std::string_view name) const;
  /// Whether the graph declares any size symbol.
  bool isSymbolic() const { return !symbols_.empty(); }

  /// Input and parameter names share one namespace and must be unique. Every
  /// symbol a type mentions must be declared on the graph, with its range.
  Expected<Value *> addInput(std::string name, TensorType type);
  Expected<Value *> addParam(std::string name, TensorType type);

  /// Creates a node: checks the operand count and attributes against the op
  /// table, fills in attribute defaults and infers the result type. An error
  /// names the op, the operand types and `location`.
  Expected<Value *> addNode(OpKind kind, std::vector<Value *> operands, AttrMap attrs = {},
                            Location location = {});

  /// Output names must be unique. A value may be output under several names.
  Expected<void> addOutput(std::string name, Value *value);

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &params() const { return params_; }
  const std::vector<GraphOutput> &outputs() const { return outputs_; }
  Value *findInput(std::string_view name) const;
  Value *findParam(std::string_view name) const;

  size_t numNodes() const { return nodes_.size(); }
  /// All nodes in creation order (not necessarily topological after rewrites).
  std::vector<Node *> nodes() const;
  /// A topological order, stable: among ready nodes the oldest comes first, so
  /// a graph built in order prints in the order it was built.
  std::vector<Node *> topologicalOrder() const;

  /// Makes every use of `from` (and every output naming it) use `to`.
  void replaceAllUsesWith(Value *from, Value *to);
  /// Removes a node whose result has no uses and is not an output.
  void eraseNode(Node *node);
  /// Removes a parameter that has no uses and is not an output.
  void eraseParam(Value *param);
  bool isOutput(const Value *value) const;

private:
  Value *addLeaf(Value::Kind kind, std::string name, TensorType type);

  std::string name_;
  std::vector<SizeSymbol> symbols_;
  std::vector<std::unique_ptr<Value>> leaves_; // inputs and params
  std::vector<Value *> inputs_;
  std::vector<Value *> params_;
  std::map<uint64_t, std::unique_ptr<Node>> nodes_; // by id
  std::vector<GraphOutput> outputs_;
  // Indexes, so that building a graph with 100,000 inputs or outputs is not
  // quadratic: leaves by name, output names, and how many outputs name each value.
  std::unordered_map<std::string, Value *> leafByName_;
  std::unordered_set<std::string> outputNames_;
  std::unordered_map<const Value *, int> outputCount_;
  uint64_t nextId_ = 0;
};

} // namespace kiln::ir
