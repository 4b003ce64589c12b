// Kernel IR constructors with type checks and trivial integer folding.
#include "ir/kernel/Builder.h"
#include "ir/kernel/TensorMap.h"

#include "ir/kernel/Printer.h"

#include "support/Error.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace kiln::kir {

namespace {

void checkSameType(const ExprPtr &a, const ExprPtr &b, const char *what) {
  KILN_CHECK(a && b, fmt::format("{}: null operand", what));
  KILN_CHECK(a->type() == b->type(),
             fmt::format("{}: operand types differ ({} x{} vs {} x{})", what,
                         dtypeName(a->type().dtype), a->type().lanes, dtypeName(b->type().dtype),
                         b->type().lanes));
}

/// Folds an integer binary op on two constants, as the hardware would (wrapping).
std::optional<int64_t> foldInt(BinaryOp op, int64_t a, int64_t b) {
  auto wrap = [](auto f) { return static_cast<int64_t>(f); };
  switch (op) {
  case BinaryOp::Add: return wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  case BinaryOp::Sub: return wrap(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  case BinaryOp::Mul: return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  case BinaryOp::Div:
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    return a / b;
  case BinaryOp::Mod:
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    return a % b;
  case BinaryOp::Min: return std::min(a, b);
  case BinaryOp::Max: return std::max(a, b);
  default: return std::nullopt;
  }
}

ExprPtr arith(BinaryOp op, ExprPtr a, ExprPtr b) {
  checkSameType(a, b, "arithmetic");
  Type type = a->type();
  if (type.dtype == DType::I64 && !type.isVector()) {
    auto ca = constIntValue(a), cb = constIntValue(b);
    if (ca && cb)
      if (auto folded = foldInt(op, *ca, *cb))
        return index(*folded);
    // Identities that keep lowered index math short.
    if (op == BinaryOp::Add && ca == 0) return b;
    if ((op == BinaryOp::Add || op == BinaryOp::Sub) && cb == 0) return a;
    if (op == BinaryOp::Mul && (ca == 0 || cb == 0)) return index(0);
    if (op == BinaryOp::Mul && ca == 1) return b;
    if ((op == BinaryOp::Mul || op == BinaryOp::Div) && cb == 1) return a;
    if (op == BinaryOp::Mod && cb == 1) return index(0);
  }
  return std::make_shared<Binary>(op, std::move(a), std::move(b), type);
}

ExprPtr compare(BinaryOp op, ExprPtr a, ExprPtr b) {
  checkSameType(a, b, "comparison");
  Type type{DType::Bool, a->type().lanes};
  return std::make_shared<Binary>(op, std::move(a), std::move(b), type);
}

} // namespace

bool isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: return true;
  default: return false;
  }
}

ExprPtr index(int64_t value) { return std::make_shared<IntImm>(value, Type::index()); }

ExprPtr intImm(int64_t value, Type type) {
  return std::make_shared<IntImm>(value, type);
}

ExprPtr floatImm(double value, Type type) {
  return std::make_shared<FloatImm>(value, type);
}

ExprPtr boolImm(bool value) { return std::make_shared<IntImm>(value ? 1 : 0, Type::boolean()); }

ExprPtr constant(double value, Type type) {
  if (isFloatingPoint(type.dtype))
    return floatImm(value, type);
  if (type.dtype == DType::Bool)
    return intImm(value != 0.0 ? 1 : 0, type);
  return intImm(static_cast<int64_t>(value), type);
}

VarPtr makeVar(std::string name, Type type) {
  return std::make_shared<Var>(Var{std::move(name), type});
}

ExprPtr ref(const VarPtr &var) { return std::make_shared<VarRef>(var); }

BufferPtr makeBuffer(std::string name, DType dtype, int64_t size, MemScope scope) {
  return std::make_shared<Buffer>(Buffer{std::move(name), dtype, size, scope});
}

std::optional<int64_t> constIntValue(const ExprPtr &e) {
  if (auto imm = as<IntImm>(*e); imm && !e->type().isVector())
    return imm->value;
  return std::nullopt;
}

ExprPtr add(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Add, std::move(a), std::move(b)); }
ExprPtr sub(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Sub, std::move(a), std::move(b)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Mul, std::move(a), std::move(b)); }
ExprPtr div(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Div, std::move(a), std::move(b)); }
ExprPtr mod(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Mod, std::move(a), std::move(b)); }
ExprPtr min(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Min, std::move(a), std::move(b)); }
ExprPtr max(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Max, std::move(a), std::move(b)); }

ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b) {
  if (isComparison(op))
    return compare(op, std::move(a), std::move(b));
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    checkSameType(a, b, "logical op");
    Type type = a->type();
    return std::make_shared<Binary>(op, std::move(a), std::move(b), type);
  }
  return arith(op, std::move(a), std::move(b));
}

ExprPtr eq(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Eq, std::move(a), std::move(b)); }
ExprPtr ne(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Ne, std::move(a), std::move(b)); }
ExprPtr lt(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Lt, std::move(a), std::move(b)); }
ExprPtr le(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Le, std::move(a), std::move(b)); }
ExprPtr gt(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Gt, std::move(a), std::move(b)); }
ExprPtr ge(ExprPtr a, ExprPtr b) { return compare(BinaryOp::Ge, std::move(a), std::move(b)); }

ExprPtr logicalAnd(ExprPtr a, ExprPtr b) {
  if (auto ca = constIntValue(a); ca && a->type().dtype == DType::Bool)
    return *ca ? b : a;
  return binary(BinaryOp::And, std::move(a), std::move(b));
}

ExprPtr logicalOr(ExprPtr a, ExprPtr b) {
  if (auto ca = constIntValue(a); ca && a->type().dtype == DType::Bool)
    return *ca ? a : b;
  return binary(BinaryOp::Or, std::move(a), std::move(b));
}

ExprPtr neg(ExprPtr a) { return std::make_shared<Unary>(UnaryOp::Neg, std::move(a)); }

ExprPtr logicalNot(ExprPtr a) {
  return std::make_shared<Unary>(UnaryOp::Not, std::move(a));
}

ExprPtr select(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse) {
  if (auto c = constIntValue(cond))
    return *c ? onTrue : onFalse;
  return std::make_shared<Select>(std::move(cond), std::move(onTrue), std::move(onFalse));
}

ExprPtr cast(ExprPtr value, Type type) {
  if (value->type() == type)
    return value;
  if (auto c = constIntValue(value); c && isInteger(type.dtype) && type.dtype == DType::I64)
    return index(*c);
  return std::make_shared<Cast>(std::move(value), type);
}

ExprPtr call(Intrinsic fn, std::vector<ExprPtr> args) {
  KILN_CHECK(args.size() == intrinsicArity(fn),
             fmt::format("{} takes {} arguments", intrinsicName(fn), intrinsicArity(fn)));
  Type type = args[0]->type();
  return std::make_shared<Call>(fn, std::move(args), type);
}

ExprPtr broadcast(ExprPtr value, int lanes) {
  KILN_CHECK(!value->type().isVector(), "broadcast of a vector");
  if (lanes == 1)
    return value;
  return std::make_shared<Broadcast>(std::move(value), lanes);
}

ExprPtr load(BufferPtr buffer, ExprPtr index, int lanes, ExprPtr predicate) {
  return std::make_shared<Load>(std::move(buffer), std::move(index), lanes, std::move(predicate));
}

ExprPtr shuffle(ShuffleMode mode, ExprPtr value, ExprPtr lane) {
  return std::make_shared<Shuffle>(mode, std::move(value), std::move(lane));
}

StmtPtr seq(std::vector<StmtPtr> stmts) {
  std::vector<StmtPtr> flat;
  for (auto &s : stmts) {
    if (!s)
      continue;
    if (auto block = as<Block>(*s))
      flat.insert(flat.end(), block->stmts.begin(), block->stmts.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1)
    return flat.front();
  return std::make_shared<Block>(std::move(flat));
}

StmtPtr forLoop(VarPtr var, ExprPtr begin, ExprPtr extent, ForKind kind, StmtPtr body) {
  return std::make_shared<For>(std::move(var), std::move(begin), std::move(extent), kind,
                               std::move(body));
}

StmtPtr forRange(VarPtr var, int64_t extent, ForKind kind, StmtPtr body) {
  return forLoop(std::move(var), index(0), index(extent), kind, std::move(body));
}

StmtPtr let(VarPtr var, ExprPtr value, StmtPtr body) {
  return std::make_shared<Let>(std::move(var), std::move(value), std::move(body));
}

StmtPtr ifThen(ExprPtr cond, StmtPtr thenBody, StmtPtr elseBody) {
  return std::make_shared<If>(std::move(cond), std::move(thenBody), std::move(elseBody));
}

StmtPtr allocate(BufferPtr buffer, StmtPtr body) {
  return std::make_shared<Allocate>(std::move(buffer), std::move(body));
}

StmtPtr store(BufferPtr buffer, ExprPtr index, ExprPtr value, ExprPtr predicate) {
  return std::make_shared<Store>(std::move(buffer), std::move(index), std::move(value),
                                 std::move(predicate));
}

StmtPtr barrier() { return std::make_shared<Barrier>(); }

StmtPtr atomic(AtomicOp op, BufferPtr buffer, ExprPtr index, ExprPtr value) {
  return std::make_shared<Atomic>(op, std::move(buffer), std::move(index), std::move(value));
}

StmtPtr mma(MmaKind kind, Fragment d, Fragment a, Fragment b, Fragment c) {
  return std::make_shared<TargetInstr>(Mma{kind, std::move(d), std::move(a), std::move(b),
                                           std::move(c)});
}

StmtPtr ldMatrix(Fragment destination, int matrices, bool transpose, BufferPtr source,
                 ExprPtr rowIndex) {
  return std::make_shared<TargetInstr>(
      LdMatrix{std::move(destination), matrices, transpose, std::move(source),
               std::move(rowIndex)});
}

StmtPtr asyncCopy(BufferPtr destination, ExprPtr destinationIndex, BufferPtr source,
                  ExprPtr sourceIndex, int lanes, ExprPtr predicate) {
  return std::make_shared<TargetInstr>(AsyncCopy{std::move(destination),
                                                 std::move(destinationIndex), std::move(source),
                                                 std::move(sourceIndex), lanes,
                                                 std::move(predicate)});
}

StmtPtr wgmma(WgmmaKind kind, int n, Fragment d, SharedMatrix a, SharedMatrix b,
              bool accumulate) {
  return std::make_shared<TargetInstr>(
      Wgmma{kind, n, std::move(d), std::move(a), std::move(b), accumulate});
}

StmtPtr wgmmaSync(WgmmaSyncOp op, int pendingGroups) {
  return std::make_shared<TargetInstr>(WgmmaSync{op, pendingGroups});
}

std::string_view wgmmaSyncOpName(WgmmaSyncOp op) {
  switch (op) {
  case WgmmaSyncOp::Fence: return "fence";
  case WgmmaSyncOp::SharedFence: return "shared_fence";
  case WgmmaSyncOp::Commit: return "commit";
  case WgmmaSyncOp::Wait: return "wait";
  }
  KILN_UNREACHABLE("wgmma sync op");
}

namespace {
StmtPtr makeMbarrier(MbarrierOp op, BufferPtr barriers, ExprPtr index, int64_t count,
                     ExprPtr parity) {
  return std::make_shared<TargetInstr>(
      Mbarrier{op, std::move(barriers), std::move(index), count, std::move(parity)});
}
} // namespace

StmtPtr mbarrierInit(BufferPtr barriers, ExprPtr index, int64_t count) {
  return makeMbarrier(MbarrierOp::Init, std::move(barriers), std::move(index), count, nullptr);
}

StmtPtr mbarrierArrive(BufferPtr barriers, ExprPtr index) {
  return makeMbarrier(MbarrierOp::Arrive, std::move(barriers), std::move(index), 0, nullptr);
}

StmtPtr mbarrierArriveExpectTx(BufferPtr barriers, ExprPtr index, int64_t bytes) {
  return makeMbarrier(MbarrierOp::ArriveExpectTx, std::move(barriers), std::move(index), bytes,
                      nullptr);
}

StmtPtr mbarrierWait(BufferPtr barriers, ExprPtr index, ExprPtr parity) {
  return makeMbarrier(MbarrierOp::Wait, std::move(barriers), std::move(index), 0,
                      std::move(parity));
}

StmtPtr tmaLoad(BufferPtr destination, ExprPtr destinationIndex, TensorMapPtr map,
                std::vector<ExprPtr> coords, BufferPtr barriers, ExprPtr barrierIndex) {
  return std::make_shared<TargetInstr>(
      TmaLoad{std::move(destination), std::move(destinationIndex), std::move(map),
              std::move(coords), std::move(barriers), std::move(barrierIndex)});
}

std::string_view mbarrierOpName(MbarrierOp op) {
  switch (op) {
  case MbarrierOp::Init: return "init";
  case MbarrierOp::Arrive: return "arrive";
  case MbarrierOp::ArriveExpectTx: return "arrive_expect_tx";
  case MbarrierOp::Wait: return "wait";
  }
  KILN_UNREACHABLE("mbarrier op");
}

StmtPtr asyncCommit() { return std::make_shared<TargetInstr>(AsyncCommit{}); }

StmtPtr asyncWait(int pendingGroups) {
  return std::make_shared<TargetInstr>(AsyncWait{pendingGroups});
}

std::string_view shuffleModeName(ShuffleMode mode) {
  switch (mode) {
  case ShuffleMode::Xor: return "xor";
  case ShuffleMode::Down: return "down";
  case ShuffleMode::Up: return "up";
  case ShuffleMode::Idx: return "idx";
  }
  KILN_UNREACHABLE("shuffle mode");
}

std::string_view atomicOpName(AtomicOp op) {
  switch (op) {
  case AtomicOp::Add: return "add";
  case AtomicOp::Max: return "max";
  case AtomicOp::Min: return "min";
  }
  KILN_UNREACHABLE("atomic op");
}

std::string_view intrinsicName(Intrinsic fn) {
  switch (fn) {
  case Intrinsic::Exp: return "exp";
  case Intrinsic::Log: return "log";
  case Intrinsic::Sqrt: return "sqrt";
  case Intrinsic::Rsqrt: return "rsqrt";
  case Intrinsic::Tanh: return "tanh";
  case Intrinsic::Erf: return "erf";
  case Intrinsic::Sin: return "sin";
  case Intrinsic::Cos: return "cos";
  case Intrinsic::Abs: return "abs";
  case Intrinsic::Floor: return "floor";
  case Intrinsic::Pow: return "pow";
  case Intrinsic::Fma: return "fma";
  }
  KILN_UNREACHABLE("intrinsic");
}

std::string_view forKindName(ForKind kind) {
  switch (kind) {
  case ForKind::Serial: return "serial";
  case ForKind::Unrolled: return "unrolled";
  case ForKind::Vectorized: return "vectorized";
  case ForKind::Parallel: return "parallel";
  case ForKind::BlockX: return "block.x";
  case ForKind::BlockY: return "block.y";
  case ForKind::BlockZ: return "block.z";
  case ForKind::ThreadX: return "thread.x";
  case ForKind::ThreadY: return "thread.y";
  case ForKind::ThreadZ: return "thread.z";
  }
  KILN_UNREACHABLE("for kind");
}

} // namespace kiln::kir
