// Generating the markdown op reference from the op table.
#include "ir/graph/OpReference.h"

#include "ir/graph/OpTable.h"

#include <fmt/format.h>

namespace kiln::ir {

namespace {

std::string operandCount(const OpInfo &op) {
  if (op.maxOperands < 0)
    return fmt::format("{} or more", op.minOperands);
  if (op.minOperands == op.maxOperands)
    return std::to_string(op.minOperands);
  return fmt::format("{} to {}", op.minOperands, op.maxOperands);
}

// Table cells must not contain '|', which ends the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += '\\';
    out += c;
  }
  return out;
}

std::string attributeTable(const OpInfo &op) {
  std::string out = "| attribute | kind | default | meaning |\n|---|---|---|---|\n";
  for (const AttrSpec &spec : op.attrs) {
    std::string defaultText =
        spec.defaultValue ? "`" + attrStr(*spec.defaultValue) + "`"
                          : (spec.mayBeAbsent ? "absent" : "required");
    out += fmt::format("| `{}` | {} | {} | {} |\n", spec.name, attrKindName(spec.kind),
                       defaultText, cell(spec.doc));
  }
  return out;
}

} // namespace

std::string printOpReference() {
  std::string out = "| op | category | operands | summary |\n|---|---|---|---|\n";
  for (const OpInfo &op : allOps())
    out += fmt::format("| [`{}`](#{}) | {} | {} | {} |\n", op.name, op.name,
                       opCategoryName(op.category), operandCount(op), cell(op.doc));
  for (const OpInfo &op : allOps()) {
    out += fmt::format("\n### {}\n\n", op.name);
    out += std::string(op.doc) + "\n\n";
    out += fmt::format("- category: {}\n- operands: {}\n", opCategoryName(op.category),
                       operandCount(op));
    if (isCompositeElementwise(op))
      out += "- composite elementwise: defined by its decomposition into primitive ops, which "
             "the interpreter evaluates, autodiff differentiates and the compiler runs\n";
    else if (op.decompose)
      out += "- composite: the `decompose` pass rewrites it into primitive ops\n";
    if (!op.attrs.empty())
      out += "\n" + attributeTable(op);
  }
  return out;
}

} // namespace kiln::ir
