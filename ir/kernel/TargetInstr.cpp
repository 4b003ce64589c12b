// The target instructions' signatures and views, expanded from ir/kernel/TargetInstrs.def,
// and the generic walks over their operands.
#include "ir/kernel/TargetInstr.h"

#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/WgmmaLayout.h"

#include "support/Error.h"

#include <fmt/format.h>

#include <type_traits>

namespace kiln::kir {

namespace {

// Each op's signature, closed by an empty spec so that an op without operands has an array.
#define KILN_OPERAND(Kind, field, access) OperandSpec{#field, OperandKind::Kind, #access[0] == 'O'},
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                 \
  constexpr OperandSpec k##Op##Operands[] = {operands OperandSpec{}};
#include "ir/kernel/TargetInstrs.def"

constexpr TargetInstrInfo kInfos[] = {
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                 \
  {name, what, minSm, orders, std::span(k##Op##Operands).first(std::size(k##Op##Operands) - 1)},
#include "ir/kernel/TargetInstrs.def"
};

template <typename T> T fromOperand(const TargetOperand &operand) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
    return static_cast<T>(std::get<int64_t>(operand));
  else
    return std::get<T>(operand);
}

template <typename T> TargetOperand toOperand(const T &value) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
    return static_cast<int64_t>(value);
  else
    return value;
}

} // namespace

#define KILN_OPERAND(Kind, field, access) out.push_back(toOperand(view.field));
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                 \
  std::vector<TargetOperand> encodeOperands([[maybe_unused]] const Op &view) {                    \
    std::vector<TargetOperand> out;                                                                \
    operands return out;                                                                           \
  }
#include "ir/kernel/TargetInstrs.def"

#define KILN_OPERAND(Kind, field, access)                                                          \
  view.field = fromOperand<decltype(view.field)>(in.at(next++));
#define KILN_TARGET_INSTR(Op, keyword, what, minSm, orders, operands)                             \
  void decodeOperands(TargetOp op, [[maybe_unused]] const std::vector<TargetOperand> &in,         \
                      [[maybe_unused]] Op &view) {                                                 \
    KILN_CHECK(op == TargetOp::Op,                                                                 \
               fmt::format("a {} viewed as {}", targetInstrInfo(op).name, keyword));               \
    [[maybe_unused]] size_t next = 0;                                                              \
    operands                                                                                       \
  }
#include "ir/kernel/TargetInstrs.def"

const TargetInstrInfo &targetInstrInfo(TargetOp op) { return kInfos[static_cast<size_t>(op)]; }

std::optional<TargetOp> targetOpNamed(std::string_view name) {
  for (size_t i = 0; i < std::size(kInfos); ++i)
    if (kInfos[i].name == name)
      return static_cast<TargetOp>(i);
  return std::nullopt;
}

bool isOptional(OperandKind kind) {
  return kind == OperandKind::OptionalIndex || kind == OperandKind::Predicate;
}

int64_t enumSize(OperandKind kind) {
  switch (kind) {
  case OperandKind::MmaShape:
  case OperandKind::WgmmaShape:
  case OperandKind::WgmmaSyncOp:
  case OperandKind::MbarrierOp: return 4;
  default: return 0;
  }
}

std::string_view enumName(OperandKind kind, int64_t value) {
  KILN_CHECK(value >= 0 && value < enumSize(kind), "enum operand out of range");
  switch (kind) {
  case OperandKind::MmaShape: return mmaKindName(static_cast<MmaKind>(value));
  case OperandKind::WgmmaShape: return wgmmaKindName(static_cast<WgmmaKind>(value));
  case OperandKind::WgmmaSyncOp: return wgmmaSyncOpName(static_cast<WgmmaSyncOp>(value));
  case OperandKind::MbarrierOp: return mbarrierOpName(static_cast<MbarrierOp>(value));
  default: KILN_UNREACHABLE("not an enum operand");
  }
}

bool holdsKind(const TargetOperand &operand, OperandKind kind) {
  switch (kind) {
  case OperandKind::Index:
  case OperandKind::OptionalIndex:
  case OperandKind::Predicate: return std::holds_alternative<ExprPtr>(operand);
  case OperandKind::Buffer: return std::holds_alternative<BufferPtr>(operand);
  case OperandKind::Fragment: return std::holds_alternative<Fragment>(operand);
  case OperandKind::SharedMatrix: return std::holds_alternative<SharedMatrix>(operand);
  case OperandKind::TensorMap: return std::holds_alternative<TensorMapPtr>(operand);
  case OperandKind::Indices: return std::holds_alternative<std::vector<ExprPtr>>(operand);
  default: return std::holds_alternative<int64_t>(operand);
  }
}

BufferPtr operandBuffer(const TargetOperand &operand) {
  if (auto *buffer = std::get_if<BufferPtr>(&operand))
    return *buffer;
  if (auto *fragment = std::get_if<Fragment>(&operand))
    return fragment->buffer;
  if (auto *matrix = std::get_if<SharedMatrix>(&operand))
    return matrix->buffer;
  if (auto *map = std::get_if<TensorMapPtr>(&operand))
    return *map ? (*map)->global : nullptr;
  return nullptr;
}

void forEachExpr(const TargetOperand &operand, const std::function<void(const ExprPtr &)> &fn) {
  if (auto *expr = std::get_if<ExprPtr>(&operand); expr && *expr)
    fn(*expr);
  else if (auto *matrix = std::get_if<SharedMatrix>(&operand))
    fn(matrix->start);
  else if (auto *exprs = std::get_if<std::vector<ExprPtr>>(&operand))
    for (const ExprPtr &e : *exprs)
      fn(e);
}

TargetOperand mapExprs(const TargetOperand &operand,
                       const std::function<ExprPtr(const ExprPtr &)> &fn) {
  if (auto *expr = std::get_if<ExprPtr>(&operand))
    return *expr ? fn(*expr) : nullptr;
  if (auto *matrix = std::get_if<SharedMatrix>(&operand)) {
    SharedMatrix result = *matrix;
    result.start = fn(matrix->start);
    return result;
  }
  if (auto *exprs = std::get_if<std::vector<ExprPtr>>(&operand)) {
    std::vector<ExprPtr> result;
    for (const ExprPtr &e : *exprs)
      result.push_back(fn(e));
    return result;
  }
  return operand;
}

} // namespace kiln::kir
