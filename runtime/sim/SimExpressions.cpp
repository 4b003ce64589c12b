// The lockstep machine's expressions: each node evaluated for every active thread of a block
// at once (a column of values per node), and the warp shuffles.
#include "runtime/sim/SimtMachine.h"

#include "ir/kernel/ScalarOps.h"
#include "runtime/sim/LaneKernels.h"

namespace kiln::sim {

using namespace kiln::kir;

bool SimtMachine::eval(int n, Active a) {
  const SimExpr &node = program_.exprs[static_cast<size_t>(n)];
  if (node.constant)
    return true;
  const size_t T = this->T();
  const int lanes = node.type.lanes;
  switch (node.kind) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm: return true;
  case ExprKind::VarRef:
    if (!varBound_[static_cast<size_t>(node.var)])
      return raise(fmt::format("variable {} is used outside its scope",
                               program_.vars[static_cast<size_t>(node.var)].var->name));
    return true;
  case ExprKind::Unary: {
    if (!eval(node.args[0], a))
      return false;
    const Scalar *x = column(node.args[0]);
    Scalar *out = output(node);
    auto op = static_cast<UnaryOp>(node.op);
    for (int l = 0; l < lanes; ++l)
      for (int32_t i = 0; i < a.count; ++i) {
        size_t at = l * T + static_cast<size_t>(a.ids[i]);
        out[at] = unaryLane(op, node.operandDtype, x[at]);
      }
    return true;
  }
  case ExprKind::Binary: {
    if (!eval(node.args[0], a) || !eval(node.args[1], a))
      return false;
    binaryColumns(static_cast<BinaryOp>(node.op), node.operandDtype, lanes, T, a.ids, a.count,
                  column(node.args[0]), column(node.args[1]), output(node));
    return true;
  }
  case ExprKind::Select: {
    if (!eval(node.args[1], a) || !eval(node.args[2], a) || !eval(node.args[0], a))
      return false;
    const Scalar *cond = column(node.args[0]);
    const Scalar *onTrue = column(node.args[1]), *onFalse = column(node.args[2]);
    bool wideCond = program_.exprs[static_cast<size_t>(node.args[0])].type.lanes != 1;
    Scalar *out = output(node);
    for (int l = 0; l < lanes; ++l)
      for (int32_t i = 0; i < a.count; ++i) {
        size_t t = static_cast<size_t>(a.ids[i]), at = l * T + t;
        out[at] = cond[wideCond ? at : t].i != 0 ? onTrue[at] : onFalse[at];
      }
    return true;
  }
  case ExprKind::Cast: {
    if (!eval(node.args[0], a))
      return false;
    const Scalar *x = column(node.args[0]);
    Scalar *out = output(node);
    for (int l = 0; l < lanes; ++l)
      for (int32_t i = 0; i < a.count; ++i) {
        size_t at = l * T + static_cast<size_t>(a.ids[i]);
        out[at] = castLane(x[at], node.operandDtype, node.type.dtype);
      }
    return true;
  }
  case ExprKind::Load: return load(node, a);
  case ExprKind::Call: {
    for (int k = 0; k < node.argCount; ++k)
      if (!eval(node.args[k], a))
        return false;
    auto fn = static_cast<Intrinsic>(node.op);
    const Scalar *cols[3] = {};
    for (int k = 0; k < node.argCount; ++k)
      cols[k] = column(node.args[k]);
    Scalar *out = output(node);
    Scalar args[3];
    for (int l = 0; l < lanes; ++l)
      for (int32_t i = 0; i < a.count; ++i) {
        size_t at = l * T + static_cast<size_t>(a.ids[i]);
        for (int k = 0; k < node.argCount; ++k)
          args[k] = cols[k][at];
        out[at] = intrinsicLane(fn, node.operandDtype, args);
      }
    return true;
  }
  case ExprKind::Broadcast: {
    if (!eval(node.args[0], a))
      return false;
    const Scalar *x = column(node.args[0]);
    Scalar *out = output(node);
    for (int l = 0; l < lanes; ++l)
      for (int32_t i = 0; i < a.count; ++i) {
        size_t t = static_cast<size_t>(a.ids[i]);
        out[l * T + t] = x[t];
      }
    return true;
  }
  case ExprKind::Shuffle: return shuffle(node, a);
  }
  KILN_UNREACHABLE("expression kind");
}

/// Every group of `size` consecutive threads (a warp, a warpgroup) with an active thread
/// must be whole and fully active.
bool SimtMachine::checkWholeGroups(Active a, std::string_view what, int32_t size,
                                   std::string_view group) {
  int32_t i = 0;
  while (i < a.count) {
    int32_t warp = a.ids[i] / size;
    int32_t warpBegin = warp * size;
    int32_t warpEnd = std::min(warpBegin + size, threads_);
    if (warpEnd - warpBegin < size)
      return raise(fmt::format("{} in {} {} of block {}, which has only {} threads (the "
                               "block's {} threads are not a multiple of {})",
                               what, group, warp, blockText(), warpEnd - warpBegin, threads_,
                               size));
    int32_t j = i;
    int32_t expected = warpBegin;
    int32_t missing = -1;
    while (j < a.count && a.ids[j] < warpEnd) {
      if (missing < 0 && a.ids[j] != expected)
        missing = expected;
      ++expected;
      ++j;
    }
    if (missing < 0 && expected < warpEnd)
      missing = expected;
    if (missing >= 0)
      return raise(fmt::format("{} reached by {} of {} {} of {} {} of block {}; thread {} "
                               "(lane {}) did not reach it",
                               what, j - i, size, size == kWarpSize ? "lanes" : "threads",
                               group, warp, blockText(), threadText(missing),
                               missing % kWarpSize));
    i = j;
  }
  return true;
}

bool SimtMachine::shuffle(const SimExpr &node, Active a) {
  if (!checkWholeWarps(a, fmt::format("a {} shuffle", shuffleModeName(
                                                            static_cast<ShuffleMode>(node.op)))))
    return false;
  if (!eval(node.args[0], a) || !eval(node.args[1], a))
    return false;
  stats_.shuffles += a.count / kWarpSize;
  const Scalar *value = column(node.args[0]), *laneArg = column(node.args[1]);
  Scalar *out = output(node);
  auto mode = static_cast<ShuffleMode>(node.op);
  for (int32_t i = 0; i < a.count; ++i) {
    int64_t t = a.ids[i];
    int64_t lane = t % kWarpSize, arg = laneArg[t].i, source = lane;
    switch (mode) {
    case ShuffleMode::Xor: source = lane ^ arg; break;
    case ShuffleMode::Down: source = lane + arg; break;
    case ShuffleMode::Up: source = lane - arg; break;
    case ShuffleMode::Idx: source = arg & (kWarpSize - 1); break;
    }
    if (source < 0 || source >= kWarpSize)
      source = lane; // out of the warp: the thread keeps its own value
    out[t] = value[t - lane + source];
  }
  return true;
}

} // namespace kiln::sim
