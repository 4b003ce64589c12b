// The kernel IR printer: stable names by first appearance, C-like operator
// precedence with minimal parentheses, explicit types on loads, stores, casts,
// lets and non-index constants.
#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/TensorMap.h"

#include "support/Error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace kiln::kir {

namespace {

// Precedence levels, loosest first; an operand looser than its context gets
// parentheses.
constexpr int kPrecOr = 1, kPrecAnd = 2, kPrecEquality = 3, kPrecRelational = 4, kPrecAdditive = 5,
              kPrecMultiplicative = 6, kPrecUnary = 7, kPrecPrimary = 8;

/// Names objects in order of first appearance; lookups only, never iterated,
/// so the pointer keys cannot make the output depend on addresses.
class Namer {
public:
  const std::string &nameOf(const void *object, const std::string &base, const char *fallback) {
    if (auto it = names_.find(object); it != names_.end())
      return it->second;
    std::string stem = base.empty() ? std::string(fallback) : base;
    std::string name = stem;
    for (int suffix = 1; taken_.contains(name); ++suffix)
      name = fmt::format("{}.{}", stem, suffix);
    taken_.insert(name);
    return names_.emplace(object, std::move(name)).first->second;
  }

private:
  std::unordered_map<const void *, std::string> names_;
  std::unordered_set<std::string> taken_;
};

/// Shortest text that reads back as the same value of `dtype`, always with a
/// '.', an exponent or a special name so it cannot be taken for an integer.
std::string formatFloat(double value, DType dtype) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // Narrow floats are exact f32 values: the shortest f32 text identifies them.
  // A value its dtype cannot hold (a malformed constant) prints all 17
  // digits, so it never reads like the valid constant nearest to it.
  std::string text;
  if (dtype == DType::F64)
    text = fmt::format("{}", value);
  else if (roundToDType(value, dtype) == value)
    text = fmt::format("{}", static_cast<float>(value));
  else
    text = fmt::format("{:.17g}", value);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string_view binaryOpText(BinaryOp op, bool bitwise) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::And: return bitwise ? "&" : "&&";
  case BinaryOp::Or: return bitwise ? "|" : "||";
  case BinaryOp::Min: return "min";
  case BinaryOp::Max: return "max";
  }
  KILN_UNREACHABLE("binary op");
}

int binaryPrecedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return kPrecOr;
  case BinaryOp::And: return kPrecAnd;
  case BinaryOp::Eq:
  case BinaryOp::Ne: return kPrecEquality;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return kPrecRelational;
  case BinaryOp::Add:
  case BinaryOp::Sub: return kPrecAdditive;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return kPrecMultiplicative;
  case BinaryOp::Min:
  case BinaryOp::Max: return kPrecPrimary; // printed as calls
  }
  KILN_UNREACHABLE("binary op");
}

class TextPrinter {
public:
  std::string kernel(const Kernel &kernel) {
    std::string params;
    for (const auto &param : kernel.params) {
      if (!params.empty())
        params += ", ";
      params += fmt::format("{}: {}", bufferName(*param), bufferType(*param));
      if (param->scope != MemScope::Global)
        params += fmt::format(" {}", memScopeName(param->scope));
    }
    std::string hint =
        kernel.minBlocksPerSm > 0 ? fmt::format(" min_blocks_per_sm={}", kernel.minBlocksPerSm) : "";
    line(fmt::format("kernel {}({}){} {{", kernel.name, params, hint));
    ++indent_;
    if (kernel.body)
      stmt(kernel.body, true);
    --indent_;
    line("}");
    return std::move(out_);
  }

  std::string topStmt(const StmtPtr &s) {
    stmt(s, true);
    return std::move(out_);
  }

  /// `e` printed for a context that needs precedence at least `minPrec`.
  std::string expr(const ExprPtr &e, int minPrec = 0) {
    if (!e)
      return "<null>";
    auto [text, prec] = exprWithPrecedence(*e);
    return prec < minPrec ? fmt::format("({})", text) : text;
  }

private:
  std::string out_;
  int indent_ = 0;
  Namer vars_, buffers_;

  const std::string &varName(const Var &var) { return vars_.nameOf(&var, var.name, "v"); }
  const std::string &bufferName(const Buffer &buffer) {
    return buffers_.nameOf(&buffer, buffer.name, "buf");
  }
  std::string fragment(const Fragment &fragment) {
    return fmt::format("{}[{}:]", bufferName(*fragment.buffer), fragment.offset);
  }
  /// One target instruction operand's value; "" for an absent optional one.
  std::string operand(OperandKind kind, const TargetOperand &operand) {
    switch (kind) {
    case OperandKind::Bool: return std::get<int64_t>(operand) ? "true" : "false";
    case OperandKind::Index:
    case OperandKind::OptionalIndex:
    case OperandKind::Predicate: {
      const ExprPtr &e = std::get<ExprPtr>(operand);
      return e ? expr(e) : "";
    }
    case OperandKind::Buffer: return bufferName(*std::get<BufferPtr>(operand));
    case OperandKind::Fragment: return fragment(std::get<Fragment>(operand));
    case OperandKind::SharedMatrix: {
      const SharedMatrix &m = std::get<SharedMatrix>(operand);
      return fmt::format("{}[{}] {} lbo={} sbo={}", bufferName(*m.buffer), expr(m.start),
                         m.mnMajor ? "mn" : "k", m.leadingBytes, m.strideBytes);
    }
    case OperandKind::TensorMap: {
      const TensorMap &map = *std::get<TensorMapPtr>(operand);
      return fmt::format("{}({} dims [{}] strides [{}] box [{}] swizzle {})", map.name,
                         bufferName(*map.global), fmt::join(map.dims, ", "),
                         fmt::join(map.strides, ", "), fmt::join(map.box, ", "),
                         tmaSwizzleName(map.swizzle));
    }
    case OperandKind::Indices: {
      std::vector<std::string> exprs;
      for (const ExprPtr &e : std::get<std::vector<ExprPtr>>(operand))
        exprs.push_back(expr(e));
      return fmt::format("[{}]", fmt::join(exprs, ", "));
    }
    default: {
      int64_t value = std::get<int64_t>(operand);
      return enumSize(kind) > 0 ? std::string(enumName(kind, value)) : std::to_string(value);
    }
    }
  }
  static std::string bufferType(const Buffer &buffer) {
    return fmt::format("{}[{}]", dtypeName(buffer.dtype), buffer.size);
  }

  void line(std::string_view text) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  std::pair<std::string, int> exprWithPrecedence(const Expr &e) {
    switch (e.kind()) {
    case ExprKind::IntImm: return intImm(static_cast<const IntImm &>(e));
    case ExprKind::FloatImm: {
      auto &imm = static_cast<const FloatImm &>(e);
      std::string text = formatFloat(imm.value, e.type().dtype) + typeName(e.type());
      return {text, text.front() == '-' ? kPrecUnary : kPrecPrimary};
    }
    case ExprKind::VarRef: return {varName(*static_cast<const VarRef &>(e).var), kPrecPrimary};
    case ExprKind::Unary: {
      auto &node = static_cast<const Unary &>(e);
      const char *op = node.op == UnaryOp::Neg ? "-" : "!";
      return {fmt::format("{}{}", op, expr(node.operand, kPrecPrimary)), kPrecUnary};
    }
    case ExprKind::Binary: return binary(static_cast<const Binary &>(e));
    case ExprKind::Select: {
      auto &node = static_cast<const Select &>(e);
      return {
          fmt::format("select({}, {}, {})", expr(node.cond), expr(node.onTrue), expr(node.onFalse)),
          kPrecPrimary};
    }
    case ExprKind::Cast: {
      auto &node = static_cast<const Cast &>(e);
      return {fmt::format("cast<{}>({})", typeName(e.type()), expr(node.value)), kPrecPrimary};
    }
    case ExprKind::Load: {
      auto &node = static_cast<const Load &>(e);
      std::string text = fmt::format("load {} {}[{}]", typeName(e.type()), bufferName(*node.buffer),
                                     expr(node.index));
      // A predicated load is always parenthesized: its "if" would otherwise
      // run into the surrounding expression or a store's own predicate.
      if (node.predicate)
        text = fmt::format("({} if {})", text, expr(node.predicate));
      return {text, kPrecPrimary};
    }
    case ExprKind::Call: {
      auto &node = static_cast<const Call &>(e);
      std::string args;
      for (const auto &arg : node.args)
        args += (args.empty() ? "" : ", ") + expr(arg);
      return {fmt::format("{}({})", intrinsicName(node.fn), args), kPrecPrimary};
    }
    case ExprKind::Broadcast: {
      auto &node = static_cast<const Broadcast &>(e);
      return {fmt::format("broadcast({}, {})", expr(node.value), e.type().lanes), kPrecPrimary};
    }
    case ExprKind::Shuffle: {
      auto &node = static_cast<const Shuffle &>(e);
      return {fmt::format("shuffle_{}({}, {})", shuffleModeName(node.mode), expr(node.value),
                          expr(node.lane)),
              kPrecPrimary};
    }
    }
    KILN_UNREACHABLE("expression kind");
  }

  static std::pair<std::string, int> intImm(const IntImm &imm) {
    const Type &type = imm.type();
    std::string text;
    if (type.dtype == DType::Bool)
      text = fmt::format("{}{}", imm.value != 0 ? "true" : "false",
                         type.isVector() ? fmt::format("x{}", type.lanes) : "");
    else if (type == Type::index())
      text = fmt::format("{}", imm.value);
    else
      text = fmt::format("{}{}", imm.value, typeName(type));
    return {text, imm.value < 0 ? kPrecUnary : kPrecPrimary};
  }

  std::pair<std::string, int> binary(const Binary &node) {
    bool bitwise = node.lhs->type().dtype != DType::Bool;
    std::string_view op = binaryOpText(node.op, bitwise);
    if (node.op == BinaryOp::Min || node.op == BinaryOp::Max)
      return {fmt::format("{}({}, {})", op, expr(node.lhs), expr(node.rhs)), kPrecPrimary};
    int prec = binaryPrecedence(node.op);
    // Left-associative: an equal-precedence right operand needs parentheses.
    return {fmt::format("{} {} {}", expr(node.lhs, prec), op, expr(node.rhs, prec + 1)), prec};
  }

  std::string range(const For &loop) {
    auto begin = as<IntImm>(*loop.begin);
    auto extent = as<IntImm>(*loop.extent);
    if (begin && extent && loop.begin->type() == Type::index())
      return fmt::format("[{}, {})", begin->value,
                         static_cast<int64_t>(static_cast<uint64_t>(begin->value) +
                                              static_cast<uint64_t>(extent->value)));
    if (begin && begin->value == 0)
      return fmt::format("[0, {})", expr(loop.extent));
    return fmt::format("[{}, {} + {})", expr(loop.begin), expr(loop.begin, kPrecAdditive),
                       expr(loop.extent, kPrecAdditive + 1));
  }

  /// A let or alloc whose scope is not the rest of the enclosing braces (it
  /// is followed by other statements) prints its body in braces of its own.
  void scoped(const std::string &header, const StmtPtr &body, bool last) {
    if (last) {
      line(header);
      stmt(body, true);
      return;
    }
    line(header + " {");
    ++indent_;
    stmt(body, true);
    --indent_;
    line("}");
  }

  void braced(const std::string &header, const StmtPtr &body) {
    line(header + " {");
    ++indent_;
    stmt(body, true);
    --indent_;
  }

  /// Prints `s`; `last` says whether nothing follows it inside the enclosing braces.
  void stmt(const StmtPtr &s, bool last) {
    if (!s)
      return;
    switch (s->kind()) {
    case StmtKind::Block: {
      auto &node = static_cast<const Block &>(*s);
      for (size_t i = 0; i < node.stmts.size(); ++i) {
        const StmtPtr &child = node.stmts[i];
        bool childLast = i + 1 == node.stmts.size();
        if (child && child->kind() == StmtKind::Block) {
          // A nested block keeps its braces: lets inside it end with it.
          if (static_cast<const Block &>(*child).stmts.empty()) {
            line("{}");
            continue;
          }
          line("{");
          ++indent_;
          stmt(child, true);
          --indent_;
          line("}");
        } else {
          stmt(child, childLast);
        }
      }
      return;
    }
    case StmtKind::For: {
      auto &node = static_cast<const For &>(*s);
      const std::string &name = varName(*node.var);
      braced(fmt::format("for {} in {} {}", name, range(node), forKindName(node.loopKind)),
             node.body);
      line("}");
      return;
    }
    case StmtKind::Let: {
      auto &node = static_cast<const Let &>(*s);
      // Names follow the text: the bound name comes before its value.
      const std::string &name = varName(*node.var);
      std::string value = expr(node.value);
      std::string type = node.var->type == Type::index() ? "" : ": " + typeName(node.var->type);
      scoped(fmt::format("let {}{} = {}", name, type, value), node.body, last);
      return;
    }
    case StmtKind::If: {
      auto &node = static_cast<const If &>(*s);
      braced(fmt::format("if {}", expr(node.cond)), node.thenBody);
      if (node.elseBody) {
        line("} else {");
        ++indent_;
        stmt(node.elseBody, true);
        --indent_;
      }
      line("}");
      return;
    }
    case StmtKind::Allocate: {
      auto &node = static_cast<const Allocate &>(*s);
      const std::string &name = bufferName(*node.buffer);
      scoped(fmt::format("alloc {}: {} {}", name, bufferType(*node.buffer),
                         memScopeName(node.buffer->scope)),
             node.body, last);
      return;
    }
    case StmtKind::Store: {
      auto &node = static_cast<const Store &>(*s);
      std::string text = fmt::format("store {} {}[{}] = {}", typeName(node.value->type()),
                                     bufferName(*node.buffer), expr(node.index), expr(node.value));
      if (node.predicate)
        text += fmt::format(" if {}", expr(node.predicate));
      line(text);
      return;
    }
    case StmtKind::Evaluate:
      line(fmt::format("eval {}", expr(static_cast<const Evaluate &>(*s).value)));
      return;
    case StmtKind::Barrier: line("barrier"); return;
    case StmtKind::TargetInstr: {
      auto &node = static_cast<const TargetInstr &>(*s);
      const TargetInstrInfo &info = targetInstrInfo(node.op);
      std::vector<std::string> operands;
      for (size_t i = 0; i < info.operands.size(); ++i)
        if (std::string text = operand(info.operands[i].kind, node.operands[i]); !text.empty())
          operands.push_back(fmt::format("{}={}", info.operands[i].role, text));
      line(fmt::format("{}{}{}", info.name, operands.empty() ? "" : " ",
                       fmt::join(operands, ", ")));
      return;
    }
    case StmtKind::Atomic: {
      auto &node = static_cast<const Atomic &>(*s);
      line(fmt::format("atomic {} {} {}[{}] <- {}", atomicOpName(node.op),
                       typeName(node.value->type()), bufferName(*node.buffer), expr(node.index),
                       expr(node.value)));
      return;
    }
    }
    KILN_UNREACHABLE("statement kind");
  }
};

} // namespace

std::string typeName(const Type &type) {
  if (type.lanes == 1)
    return std::string(dtypeName(type.dtype));
  return fmt::format("{}x{}", dtypeName(type.dtype), type.lanes);
}

std::string_view memScopeName(MemScope scope) {
  switch (scope) {
  case MemScope::Global: return "global";
  case MemScope::Local: return "local";
  case MemScope::Shared: return "shared";
  case MemScope::Register: return "register";
  }
  KILN_UNREACHABLE("memory scope");
}

std::string printKernel(const Kernel &kernel) { return TextPrinter().kernel(kernel); }

std::string printStmt(const StmtPtr &stmt) { return TextPrinter().topStmt(stmt); }

std::string printExpr(const ExprPtr &expr) { return TextPrinter().expr(expr); }

} // namespace kiln::kir
