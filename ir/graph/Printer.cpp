// Printing a graph in the canonical text form read back by Parser.cpp.
#include "ir/graph/Printer.h"

#include "ir/graph/Lexer.h"

#include <algorithm>
#include <unordered_map>

namespace kiln::ir {

namespace {

// Names for every value of the graph. Node results are numbered in
// topological order; nodes a cycle keeps out of that order (a broken graph the
// verifier will reject) follow in creation order, so even those print.
class ValueNames {
public:
  ValueNames(const Graph &graph, const std::vector<Node *> &order) {
    for (const Value *input : graph.inputs())
      names_[input] = "%" + input->name();
    for (const Value *param : graph.params())
      names_[param] = "%" + param->name();
    size_t next = 0;
    for (const Node *node : order)
      names_[node->result()] = "%" + std::to_string(next++);
  }

  // A value outside the graph can only come from a broken rewrite; printing
  // it visibly helps debug that rewrite.
  std::string operator()(const Value *value) const {
    auto it = names_.find(value);
    return it == names_.end() ? std::string("%<unknown>") : it->second;
  }

private:
  std::unordered_map<const Value *, std::string> names_;
};

std::vector<Node *> printOrder(const Graph &graph) {
  std::vector<Node *> order = graph.topologicalOrder();
  if (order.size() != graph.numNodes()) {
    std::vector<Node *> all = graph.nodes();
    for (Node *node : all)
      if (std::find(order.begin(), order.end(), node) == order.end())
        order.push_back(node);
  }
  return order;
}

std::string graphNameStr(const std::string &name) {
  return isIdentifier(name) ? name : attrStr(Attr(name));
}

void printNode(std::string &out, const Node &node, const ValueNames &names) {
  out += "  " + names(node.result()) + ": " + node.type().str() + " = ";
  out += node.name();
  out += "(";
  for (size_t i = 0; i < node.numOperands(); ++i) {
    if (i != 0)
      out += ", ";
    out += names(node.operand(i));
  }
  out += ")";
  if (!node.attrs().empty()) {
    out += " {";
    bool first = true;
    for (const auto &[name, value] : node.attrs()) { // AttrMap is sorted by name
      if (!first)
        out += ", ";
      first = false;
      out += name + " = " + attrStr(value);
    }
    out += "}";
  }
  out += "\n";
}

} // namespace

std::string printGraph(const Graph &graph) {
  std::vector<Node *> order = printOrder(graph);
  ValueNames names(graph, order);
  std::string out = "graph @" + graphNameStr(graph.name());
  if (graph.isSymbolic()) {
    out += "(";
    for (size_t i = 0; i < graph.symbols().size(); ++i)
      out += (i == 0 ? "" : ", ") + graph.symbols()[i].str();
    out += ")";
  }
  out += " {\n";
  for (const Value *input : graph.inputs())
    out += "  input " + names(input) + ": " + input->type().str() + "\n";
  for (const Value *param : graph.params())
    out += "  param " + names(param) + ": " + param->type().str() + "\n";
  for (const Node *node : order)
    printNode(out, *node, names);
  for (const GraphOutput &output : graph.outputs())
    out += "  output " + attrStr(Attr(output.name)) + " = " + names(output.value) + "\n";
  out += "}\n";
  return out;
}

} // namespace kiln::ir
