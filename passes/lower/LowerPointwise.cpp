// Pointwise groups: a loop nest over the output with the outer axes collapsed
// into one (parallel) task loop and the innermost axis vectorized; groups of
// same-shape elementwise ops run as one flat loop; transpose-like groups run
// in square tiles (TransposeSchedule).
#include "passes/lower/LowerKinds.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;

bool isFlatPointwise(const passes::FusionGroup &group) {
  const ir::Shape &shape = group.root->type().shape;
  for (const ir::Node *node : group.nodes) {
    if (node->type().numElements() == 1 && node->numOperands() == 0)
      continue; // a scalar constant or iota
    if (node->info().category != ir::OpCategory::Elementwise ||
        node->kind() == ir::OpKind::BatchNorm || node->type().shape != shape)
      return false;
    for (const ir::Value *operand : node->operands())
      if (operand->type().shape != shape && operand->type().numElements() != 1)
        return false;
  }
  return true;
}

namespace {

/// Elements per parallel task of a flat loop: enough tasks for every core to
/// get several, none smaller than a few vectors.
int64_t flatBlock(int64_t n, int vectorWidth, int cores) {
  int64_t tasks = std::max(1, cores) * 4;
  int64_t block = ceilDiv(n, tasks);
  int64_t minBlock = int64_t{vectorWidth} * 64;
  block = std::max(block, minBlock);
  return ceilDiv(block, vectorWidth) * vectorWidth;
}

Expected<StmtPtr> lowerFlat(LowerContext &cx, const PointwiseSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  int64_t n = product(shape);
  // The flat index goes on the last axis of extent > 1: axes after it have extent 1, so its
  // stride is 1, and an operand read there is not taken for a broadcast (a size-1 axis is
  // read at 0), which the last axis of [4, 1] would be.
  size_t flatAxis = shape.size() - 1;
  while (flatAxis > 0 && shape[flatAxis] == 1)
    --flatAxis;
  auto element = [&](ExprPtr flat) -> Expected<StmtPtr> {
    std::vector<ExprPtr> index(shape.size(), kir::index(0));
    index[flatAxis] = flat;
    KILN_TRY(ExprPtr value, cx.emitter.at(cx.root(), index));
    return storeBound(cx.signature.out, flat, value, cx.names);
  };
  if (!runsInParallel(n, schedule.minParallelWork))
    return loop(cx.names, "i", n, ForKind::Vectorized, element);
  int64_t block = flatBlock(n, schedule.vectorWidth, cx.target.cores);
  int64_t tasks = ceilDiv(n, block);
  return taskLoop(cx.names, tasks, true, [&](ExprPtr task) -> Expected<StmtPtr> {
    ExprPtr begin = mul(task, kir::index(block));
    ExprPtr extent = tasks == 1 ? kir::index(n) : min(kir::index(block), sub(kir::index(n), begin));
    return loop(cx.names, "i", begin, extent, ForKind::Vectorized, element);
  });
}

} // namespace

Expected<StmtPtr> lowerPointwise(LowerContext &cx, const PointwiseSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  int64_t n = product(shape);
  if (n == 0)
    return seq({});
  if (shape.empty())
    return cx.storeRoot({});
  if (isFlatPointwise(cx.group))
    return lowerFlat(cx, schedule);

  // Rows (all axes but the last, collapsed) x column blocks of the last axis,
  // so a tensor with few long rows still gives every core work.
  std::vector<int64_t> rowExtents(shape.begin(), shape.end() - 1);
  int64_t rows = product(rowExtents), width = shape.back();
  bool parallel = runsInParallel(n, schedule.minParallelWork);
  int64_t columnBlocks = 1;
  int64_t wantedTasks = int64_t{std::max(1, cx.target.cores)} * 4;
  if (parallel && rows < wantedTasks)
    columnBlocks = std::min(ceilDiv(wantedTasks, rows), ceilDiv(width, int64_t{schedule.vectorWidth} * 64));
  columnBlocks = std::max<int64_t>(columnBlocks, 1);
  int64_t blockWidth = ceilDiv(ceilDiv(width, columnBlocks), schedule.vectorWidth) * schedule.vectorWidth;
  columnBlocks = ceilDiv(width, blockWidth);

  return taskLoop(cx.names, rows * columnBlocks, parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
    ExprPtr row = columnBlocks == 1 ? task : div(task, kir::index(columnBlocks));
    std::vector<ExprPtr> index = delinearize(row, rowExtents);
    ExprPtr begin = kir::index(0), extent = kir::index(width);
    if (columnBlocks > 1) {
      begin = mul(mod(task, kir::index(columnBlocks)), kir::index(blockWidth));
      extent = min(kir::index(blockWidth), sub(kir::index(width), begin));
    }
    index.push_back(nullptr);
    return loop(cx.names, "i", begin, extent, ForKind::Vectorized,
                [&](ExprPtr column) -> Expected<StmtPtr> {
                  index.back() = column;
                  return cx.storeRoot(index);
                });
  });
}

std::optional<TransposedRead> findTransposedRead(const passes::FusionGroup &group) {
  const ir::Shape &shape = group.root->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2 || shape.back() == 1)
    return std::nullopt;
  for (const ir::Node *node : group.nodes) {
    if (node->kind() != ir::OpKind::Transpose || node->type().shape != shape)
      continue;
    const auto &perm = ir::getInts(node->attrs(), "perm");
    const ir::Shape &in = node->operand(0)->type().shape;
    if (perm.back() == rank - 1 || in.back() == 1)
      continue;
    TransposedRead read{node, 0, true};
    for (int64_t k = 0; k < rank; ++k)
      if (perm[static_cast<size_t>(k)] == rank - 1)
        read.axis = k;
    std::vector<const ir::Value *> dependent{node->result()};
    for (const ir::Node *user : group.nodes) {
      bool reads = std::any_of(user->operands().begin(), user->operands().end(), [&](const ir::Value *v) {
        return std::find(dependent.begin(), dependent.end(), v) != dependent.end();
      });
      if (!reads)
        continue;
      dependent.push_back(user->result());
      read.stageable = read.stageable && user->info().category == ir::OpCategory::Elementwise &&
                       user->type().shape == shape;
    }
    return read;
  }
  return std::nullopt;
}

std::optional<int64_t> transposedAxis(const passes::FusionGroup &group) {
  if (auto read = findTransposedRead(group))
    return read->axis;
  return std::nullopt;
}

// Tiles of tile x tile over the output's innermost axis and the axis that is
// contiguous in the transposed operand. A stageable transpose first copies
// its tile into a local buffer reading along the operand's rows, then the
// output rows are written from it: every cache line of either tensor is
// touched once per tile, so power-of-two strides cannot thrash the cache.
// The write loop reads the tile with a stride, which vector code would turn
// into gathers; it stays scalar (measured 2-4x faster on AVX-512).
Expected<StmtPtr> lowerTranspose(LowerContext &cx, const TransposeSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  std::optional<TransposedRead> read = findTransposedRead(cx.group);
  if (!read)
    return lowerPointwise(cx, PointwiseSchedule{.vectorWidth = cx.target.f32Lanes(),
                                                .minParallelWork = schedule.minParallelWork});
  int64_t n = product(shape);
  if (n == 0)
    return seq({});
  size_t q = static_cast<size_t>(read->axis), last = shape.size() - 1;
  int64_t tile = std::max<int64_t>(schedule.tile, 1);
  // Task extents: every axis but the two tiled ones, then the tile counts.
  std::vector<int64_t> extents;
  for (size_t k = 0; k < last; ++k)
    if (k != q)
      extents.push_back(shape[k]);
  int64_t qTiles = ceilDiv(shape[q], tile), lastTiles = ceilDiv(shape[last], tile);
  extents.push_back(qTiles);
  extents.push_back(lastTiles);
  bool parallel = runsInParallel(n, schedule.minParallelWork);
  return taskLoop(cx.names, product(extents), parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
    std::vector<ExprPtr> parts = delinearize(task, extents);
    std::vector<ExprPtr> index(shape.size());
    size_t next = 0;
    for (size_t k = 0; k < last; ++k)
      if (k != q)
        index[k] = parts[next++];
    auto tileRange = [&](ExprPtr t, int64_t size, int64_t tiles) {
      ExprPtr begin = mul(t, kir::index(tile));
      ExprPtr extent = tiles == 1 ? kir::index(size) : min(kir::index(tile), sub(kir::index(size), begin));
      return std::pair{begin, extent};
    };
    auto [qBegin, qExtent] = tileRange(parts[next], shape[q], qTiles);
    auto [lBegin, lExtent] = tileRange(parts[next + 1], shape[last], lastTiles);
    auto slot = [tile, qBegin = qBegin, lBegin = lBegin](const ExprPtr &a, const ExprPtr &b) {
      return add(mul(sub(b, lBegin), kir::index(tile)), sub(a, qBegin));
    };
    StmtPtr stage;
    BufferPtr staged;
    if (read->stageable) {
      const ir::Value *operand = read->node->operand(0);
      const auto &perm = ir::getInts(read->node->attrs(), "perm");
      staged = makeBuffer(cx.names.name("tile"), operand->type().dtype, tile * tile, MemScope::Local);
      KILN_TRY(stage, loop(cx.names, "i", lBegin, lExtent, ForKind::Serial, [&](ExprPtr b) -> Expected<StmtPtr> {
        return loop(cx.names, "i", qBegin, qExtent, ForKind::Vectorized, [&](ExprPtr a) -> Expected<StmtPtr> {
          std::vector<ExprPtr> at = index;
          at[q] = a;
          at[last] = b;
          std::vector<ExprPtr> operandIndex(at.size());
          for (size_t k = 0; k < at.size(); ++k)
            operandIndex[static_cast<size_t>(perm[k])] = at[k];
          KILN_TRY(ExprPtr value, cx.emitter.at(operand, operandIndex));
          return storeBound(staged, slot(a, b), value, cx.names);
        });
      }));
      cx.emitter.overrideValue(read->node->result(), [slot, staged, q, last](std::span<const ExprPtr> i) {
        return load(staged, slot(i[q], i[last]));
      });
    }
    KILN_TRY(StmtPtr write, loop(cx.names, "i", qBegin, qExtent, ForKind::Serial, [&](ExprPtr a) -> Expected<StmtPtr> {
      index[q] = a;
      return loop(cx.names, "i", lBegin, lExtent, staged ? ForKind::Serial : ForKind::Vectorized,
                  [&](ExprPtr b) -> Expected<StmtPtr> {
                    index[last] = b;
                    return cx.storeRoot(index);
                  });
    }));
    if (!staged)
      return write;
    return allocate(staged, seq({stage, write}));
  });
}

} // namespace kiln::lower
