// Kernel IR constructors with type checks and trivial integer folding.
#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/WgmmaLayout.h"

#include "ir/kernel/Printer.h"

#include "support/Error.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace kiln::kir {

namespace {

bool isIntegerLike(const Type &t) { return isInteger(t.dtype) || t.dtype == DType::Bool; }

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
  KILN_CHECK(isIntegerLike(type), "intImm of a float type");
  return std::make_shared<IntImm>(value, type);
}

ExprPtr floatImm(double value, Type type) {
  KILN_CHECK(isFloatingPoint(type.dtype), "floatImm of a non-float type");
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
    KILN_CHECK(isIntegerLike(a->type()), "logical op on floats");
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
  KILN_CHECK(a->type().dtype == DType::Bool, "logical not of a non-bool");
  return std::make_shared<Unary>(UnaryOp::Not, std::move(a));
}

ExprPtr select(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse) {
  checkSameType(onTrue, onFalse, "select");
  KILN_CHECK(cond->type().dtype == DType::Bool &&
                 (cond->type().lanes == 1 || cond->type().lanes == onTrue->type().lanes),
             "select condition must be bool with 1 or matching lanes");
  if (auto c = constIntValue(cond))
    return *c ? onTrue : onFalse;
  return std::make_shared<Select>(std::move(cond), std::move(onTrue), std::move(onFalse));
}

ExprPtr cast(ExprPtr value, Type type) {
  KILN_CHECK(value->type().lanes == type.lanes, "cast changes the lane count");
  if (value->type() == type)
    return value;
  if (auto c = constIntValue(value); c && isInteger(type.dtype) && type.dtype == DType::I64)
    return index(*c);
  return std::make_shared<Cast>(std::move(value), type);
}

ExprPtr call(Intrinsic fn, std::vector<ExprPtr> args) {
  size_t expected = fn == Intrinsic::Pow ? 2 : fn == Intrinsic::Fma ? 3 : 1;
  KILN_CHECK(args.size() == expected,
             fmt::format("{} takes {} arguments", intrinsicName(fn), expected));
  for (const auto &arg : args)
    checkSameType(args[0], arg, "intrinsic call");
  KILN_CHECK(isFloatingPoint(args[0]->type().dtype) || fn == Intrinsic::Abs,
             fmt::format("{} of a non-float", intrinsicName(fn)));
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
  KILN_CHECK(index->type() == Type::index(), "load index must be an i64 scalar");
  KILN_CHECK(!predicate || predicate->type().dtype == DType::Bool, "load predicate must be bool");
  return std::make_shared<Load>(std::move(buffer), std::move(index), lanes, std::move(predicate));
}

ExprPtr shuffle(ShuffleMode mode, ExprPtr value, ExprPtr lane) {
  DType dtype = value->type().dtype;
  KILN_CHECK(!value->type().isVector() && (dtype == DType::F32 || dtype == DType::F64 ||
                                           dtype == DType::I32 || dtype == DType::I64),
             "shuffle of a value that is not an f32, f64, i32 or i64 scalar");
  KILN_CHECK(lane->type() == Type::scalar(DType::I32), "shuffle lane must be an i32 scalar");
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
  KILN_CHECK(var->type == Type::index(), "loop variables are i64");
  KILN_CHECK(begin->type() == Type::index() && extent->type() == Type::index(),
             "loop bounds are i64");
  return std::make_shared<For>(std::move(var), std::move(begin), std::move(extent), kind,
                               std::move(body));
}

StmtPtr forRange(VarPtr var, int64_t extent, ForKind kind, StmtPtr body) {
  return forLoop(std::move(var), index(0), index(extent), kind, std::move(body));
}

StmtPtr let(VarPtr var, ExprPtr value, StmtPtr body) {
  KILN_CHECK(var->type == value->type(), "let value type differs from the variable's");
  return std::make_shared<Let>(std::move(var), std::move(value), std::move(body));
}

StmtPtr ifThen(ExprPtr cond, StmtPtr thenBody, StmtPtr elseBody) {
  KILN_CHECK(cond->type() == Type::boolean(), "if condition must be a bool scalar");
  return std::make_shared<If>(std::move(cond), std::move(thenBody), std::move(elseBody));
}

StmtPtr allocate(BufferPtr buffer, StmtPtr body) {
  KILN_CHECK(buffer->scope != MemScope::Global, "global buffers are kernel parameters");
  return std::make_shared<Allocate>(std::move(buffer), std::move(body));
}

StmtPtr store(BufferPtr buffer, ExprPtr index, ExprPtr value, ExprPtr predicate) {
  KILN_CHECK(index->type() == Type::index(), "store index must be an i64 scalar");
  KILN_CHECK(value->type().dtype == buffer->dtype,
             fmt::format("store of {} into {} buffer {}", dtypeName(value->type().dtype),
                         dtypeName(buffer->dtype), buffer->name));
  KILN_CHECK(!predicate || predicate->type().dtype == DType::Bool, "store predicate must be bool");
  return std::make_shared<Store>(std::move(buffer), std::move(index), std::move(value),
                                 std::move(predicate));
}

StmtPtr barrier() { return std::make_shared<Barrier>(); }

StmtPtr atomic(AtomicOp op, BufferPtr buffer, ExprPtr index, ExprPtr value) {
  KILN_CHECK(index->type() == Type::index(), "atomic index must be an i64 scalar");
  KILN_CHECK(buffer->scope == MemScope::Global || buffer->scope == MemScope::Shared,
             "atomics update global or shared buffers");
  KILN_CHECK(value->type() == Type::scalar(buffer->dtype),
             fmt::format("atomic of {} into {} buffer {}", typeName(value->type()),
                         dtypeName(buffer->dtype), buffer->name));
  DType dtype = buffer->dtype;
  bool integer = dtype == DType::I32 || dtype == DType::I64;
  KILN_CHECK(integer || (op == AtomicOp::Add && (dtype == DType::F32 || dtype == DType::F64)),
             fmt::format("atomic {} is not defined on {}", atomicOpName(op), dtypeName(dtype)));
  return std::make_shared<Atomic>(op, std::move(buffer), std::move(index), std::move(value));
}

namespace {
void checkFragment(const Fragment &fragment, DType dtype, int64_t count, std::string_view what) {
  KILN_CHECK(fragment.buffer && fragment.buffer->scope == MemScope::Register,
             fmt::format("{} must be a register buffer", what));
  KILN_CHECK(fragment.buffer->dtype == dtype,
             fmt::format("{} {} is {}, not {}", what, fragment.buffer->name,
                         dtypeName(fragment.buffer->dtype), dtypeName(dtype)));
  KILN_CHECK(fragment.offset >= 0 && fragment.offset + count <= fragment.buffer->size,
             fmt::format("{} {}[{}, {}) is outside its {} elements", what, fragment.buffer->name,
                         fragment.offset, fragment.offset + count, fragment.buffer->size));
}
} // namespace

StmtPtr mma(MmaKind kind, Fragment d, Fragment a, Fragment b, Fragment c) {
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  checkFragment(d, DType::F32, info.cElements, "mma d");
  checkFragment(a, info.operandDtype, info.aElements, "mma a");
  checkFragment(b, info.operandDtype, info.bElements, "mma b");
  checkFragment(c, DType::F32, info.cElements, "mma c");
  return std::make_shared<Mma>(kind, std::move(d), std::move(a), std::move(b), std::move(c));
}

StmtPtr ldMatrix(Fragment destination, int matrices, bool transpose, BufferPtr source,
                 ExprPtr rowIndex) {
  KILN_CHECK(matrices == 1 || matrices == 2 || matrices == 4, "ldmatrix loads 1, 2 or 4 matrices");
  KILN_CHECK(source->scope == MemScope::Shared, "ldmatrix reads a shared buffer");
  int bytes = dtypeByteSize(source->dtype);
  KILN_CHECK(bytes == 2 || (bytes == 1 && !transpose),
             "ldmatrix reads 16-bit elements, or 8-bit ones without .trans");
  checkFragment(destination, source->dtype, ldMatrixElementsPerMatrix(bytes) * matrices,
                "ldmatrix destination");
  KILN_CHECK(rowIndex->type() == Type::index(), "ldmatrix row index must be an i64 scalar");
  return std::make_shared<LdMatrix>(std::move(destination), matrices, transpose,
                                    std::move(source), std::move(rowIndex));
}

StmtPtr asyncCopy(BufferPtr destination, ExprPtr destinationIndex, BufferPtr source,
                  ExprPtr sourceIndex, int lanes, ExprPtr predicate) {
  KILN_CHECK(destination->scope == MemScope::Shared && source->scope == MemScope::Global,
             "an async copy goes from a global buffer to a shared one");
  KILN_CHECK(destination->dtype == source->dtype,
             fmt::format("async copy from {} {} into {} {}", dtypeName(source->dtype),
                         source->name, dtypeName(destination->dtype), destination->name));
  int bytes = lanes * dtypeByteSize(source->dtype);
  KILN_CHECK(bytes == 4 || bytes == 8 || bytes == 16,
             fmt::format("an async copy moves 4, 8 or 16 bytes, not {}", bytes));
  KILN_CHECK(destinationIndex->type() == Type::index() && sourceIndex->type() == Type::index(),
             "async copy indices must be i64 scalars");
  KILN_CHECK(!predicate || predicate->type() == Type::boolean(),
             "async copy predicate must be a bool scalar");
  return std::make_shared<AsyncCopy>(std::move(destination), std::move(destinationIndex),
                                     std::move(source), std::move(sourceIndex), lanes,
                                     std::move(predicate));
}

StmtPtr wgmma(WgmmaKind kind, int n, Fragment d, SharedMatrix a, SharedMatrix b,
              bool accumulate) {
  auto product = std::make_shared<Wgmma>(kind, n, std::move(d), std::move(a), std::move(b),
                                         accumulate);
  std::optional<std::string> problem = wgmmaProblem(*product);
  KILN_CHECK(!problem, *problem);
  return product;
}

StmtPtr wgmmaSync(WgmmaSyncOp op, int pendingGroups) {
  KILN_CHECK(pendingGroups >= 0 && pendingGroups <= 7 &&
                 (op == WgmmaSyncOp::Wait || pendingGroups == 0),
             "a wgmma wait allows 0..7 pending groups; the other syncs take none");
  return std::make_shared<WgmmaSync>(op, pendingGroups);
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
  KILN_CHECK(barriers && barriers->scope == MemScope::Shared && barriers->dtype == DType::I64,
             "mbarriers live in a shared i64 buffer");
  KILN_CHECK(index && index->type() == Type::index(), "mbarrier: index must be an i64 scalar");
  KILN_CHECK(!parity || parity->type() == Type::index(), "mbarrier: parity must be an i64 scalar");
  return std::make_shared<Mbarrier>(op, std::move(barriers), std::move(index), count,
                                    std::move(parity));
}
} // namespace

StmtPtr mbarrierInit(BufferPtr barriers, ExprPtr index, int64_t count) {
  KILN_CHECK(count >= 1 && count < (int64_t{1} << 20), "an mbarrier expects 1 to 2^20-1 arrivals");
  return makeMbarrier(MbarrierOp::Init, std::move(barriers), std::move(index), count, nullptr);
}

StmtPtr mbarrierArrive(BufferPtr barriers, ExprPtr index) {
  return makeMbarrier(MbarrierOp::Arrive, std::move(barriers), std::move(index), 0, nullptr);
}

StmtPtr mbarrierArriveExpectTx(BufferPtr barriers, ExprPtr index, int64_t bytes) {
  KILN_CHECK(bytes >= 0 && bytes < (int64_t{1} << 20), "an mbarrier expects 0 to 2^20-1 bytes");
  return makeMbarrier(MbarrierOp::ArriveExpectTx, std::move(barriers), std::move(index), bytes,
                      nullptr);
}

StmtPtr mbarrierWait(BufferPtr barriers, ExprPtr index, ExprPtr parity) {
  KILN_CHECK(parity != nullptr, "an mbarrier wait names the parity it waits for");
  return makeMbarrier(MbarrierOp::Wait, std::move(barriers), std::move(index), 0,
                      std::move(parity));
}

StmtPtr tmaLoad(BufferPtr destination, ExprPtr destinationIndex, TensorMapPtr map,
                std::vector<ExprPtr> coords, BufferPtr barriers, ExprPtr barrierIndex) {
  auto copy = std::make_shared<TmaLoad>(std::move(destination), std::move(destinationIndex),
                                        std::move(map), std::move(coords), std::move(barriers),
                                        std::move(barrierIndex));
  std::optional<std::string> problem = tmaLoadProblem(*copy);
  KILN_CHECK(!problem, *problem);
  return copy;
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

StmtPtr asyncCommit() { return std::make_shared<AsyncCommit>(); }

StmtPtr asyncWait(int pendingGroups) {
  KILN_CHECK(pendingGroups >= 0 && pendingGroups <= 7, "async wait allows 0..7 pending groups");
  return std::make_shared<AsyncWait>(pendingGroups);
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
