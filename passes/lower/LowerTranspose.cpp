// Transpose-like pointwise groups (the innermost output axis is strided in a
// transposed operand): the output in tile x tile tiles over that axis and the
// axis contiguous in the operand, the transpose staged through a tile buffer
// so both global sides are read and written along their rows. The tiling, the
// operand's index and the staged reads are shared; the targets differ in how
// tiles and elements bind: the CPU runs tiles as (parallel) tasks, a Local
// tile and loops; the GPU a block per tile, a Shared tile padded by one
// element (no bank conflicts on the strided side), tile x rowsPerPass threads
// and a barrier between the phases.
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;

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

namespace {

/// The tiles of a transpose-like output: axis q (contiguous in the operand)
/// and the last axis in tiles of `tile`, every other axis one tile wide.
struct TransposeTiles {
  TransposeTiles(const TransposedRead &read, const ir::Shape &shape, int64_t tile)
      : shape(shape), tile(tile), q(static_cast<size_t>(read.axis)), last(shape.size() - 1),
        operand(read.node->operand(0)), perm(ir::getInts(read.node->attrs(), "perm")) {
    for (size_t k = 0; k < last; ++k)
      if (k != q)
        extents.push_back(shape[k]);
    extents.push_back(ceilDiv(shape[q], tile));
    extents.push_back(ceilDiv(shape[last], tile));
  }

  /// The output index of tile `tileIndex` (row-major over `extents`), its q
  /// and last axes left to the caller, and the two tile coordinates.
  struct Tile {
    std::vector<ExprPtr> index;
    ExprPtr qTile, lastTile;
  };
  Tile at(ExprPtr tileIndex) const {
    std::vector<ExprPtr> parts = delinearize(std::move(tileIndex), extents);
    Tile t{std::vector<ExprPtr>(shape.size()), nullptr, nullptr};
    size_t next = 0;
    for (size_t k = 0; k < last; ++k)
      if (k != q)
        t.index[k] = parts[next++];
    t.qTile = parts[next];
    t.lastTile = parts[next + 1];
    return t;
  }

  /// The operand's element for output index `index` with q = a and last = b.
  Expected<ExprPtr> operandAt(KernelContext &cx, std::vector<ExprPtr> index, ExprPtr a,
                              ExprPtr b) const {
    index[q] = std::move(a);
    index[last] = std::move(b);
    std::vector<ExprPtr> operandIndex(index.size());
    for (size_t k = 0; k < index.size(); ++k)
      operandIndex[static_cast<size_t>(perm[k])] = index[k];
    return cx.emitter.at(operand, operandIndex);
  }

  /// Reads of the transpose from now on come from `staged`, a tile with rows
  /// of `pitch` elements along the last axis starting at (qBegin, lBegin).
  void readFromTile(KernelContext &cx, const TransposedRead &read, BufferPtr staged,
                    ExprPtr qBegin, ExprPtr lBegin, int64_t pitch) const {
    cx.emitter.overrideValue(read.node->result(), [staged, qBegin, lBegin, pitch, q = q,
                                                   last = last](std::span<const ExprPtr> i) {
      return load(staged, add(mul(sub(i[last], lBegin), kir::index(pitch)), sub(i[q], qBegin)));
    });
  }

  const ir::Shape &shape;
  int64_t tile;
  size_t q, last;
  const ir::Value *operand;
  const std::vector<int64_t> &perm;
  std::vector<int64_t> extents; ///< every axis but q and last, then the tile counts
};

} // namespace

// CPU: each tile a task. A stageable transpose first copies its tile into a
// Local buffer reading along the operand's rows, then the output rows are
// written from it: every cache line of either tensor is touched once per
// tile, so power-of-two strides cannot thrash the cache. The write loop reads
// the tile with a stride, which vector code would turn into gathers; it stays
// scalar (measured 2-4x faster on AVX-512).
Expected<StmtPtr> lowerTranspose(LowerContext &cx, const TransposeSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  std::optional<TransposedRead> read = findTransposedRead(cx.group);
  // The tiled axes are static: a symbolic leading axis runs over whole tiles.
  if (read && (read->axis == 0 || shape.size() == 1))
    KILN_TRY_VOID(requireStaticGroup(cx.group, "a CPU transpose tiling its leading axis"));
  if (!read)
    return lowerPointwise(cx, PointwiseSchedule{.vectorWidth = cx.target.f32Lanes(),
                                                .minParallelWork = schedule.minParallelWork});
  int64_t n = product(shape);
  if (n == 0)
    return seq({});
  int64_t tile = std::max<int64_t>(schedule.tile, 1);
  TransposeTiles tiles(*read, shape, tile);
  size_t q = tiles.q, last = tiles.last;
  int64_t qTiles = tiles.extents[tiles.extents.size() - 2], lastTiles = tiles.extents.back();
  bool parallel = runsInParallel(n, schedule.minParallelWork);
  ExprPtr tasks = cx.sizes.withLeadingAxis(cx.root(), product(tiles.extents));
  return taskLoop(cx.names, tasks, parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
    TransposeTiles::Tile at = tiles.at(task);
    std::vector<ExprPtr> &index = at.index;
    auto tileRange = [&](ExprPtr t, int64_t size, int64_t count) {
      ExprPtr begin = mul(t, kir::index(tile));
      ExprPtr extent = count == 1 ? kir::index(size) : min(kir::index(tile), sub(kir::index(size), begin));
      return std::pair{begin, extent};
    };
    auto [qBegin, qExtent] = tileRange(at.qTile, shape[q], qTiles);
    auto [lBegin, lExtent] = tileRange(at.lastTile, shape[last], lastTiles);
    StmtPtr stage;
    BufferPtr staged;
    if (read->stageable) {
      staged = makeBuffer(cx.names.name("tile"), tiles.operand->type().dtype, tile * tile, MemScope::Local);
      KILN_TRY(stage, loop(cx.names, "i", lBegin, lExtent, ForKind::Serial, [&](ExprPtr b) -> Expected<StmtPtr> {
        return loop(cx.names, "i", qBegin, qExtent, ForKind::Vectorized, [&](ExprPtr a) -> Expected<StmtPtr> {
          KILN_TRY(ExprPtr value, tiles.operandAt(cx, index, a, b));
          ExprPtr slot = add(mul(sub(b, lBegin), kir::index(tile)), sub(a, qBegin));
          return storeBound(staged, slot, value, cx.names);
        });
      }));
      tiles.readFromTile(cx, *read, staged, qBegin, lBegin, tile);
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

// GPU: a block per tile. Threads along x walk the q axis (contiguous in the
// operand) in the read phase and the output's last axis in the write phase,
// so both global sides are coalesced.
Expected<StmtPtr> lowerGpuTranspose(GpuLowerContext &cx, const GpuTransposeSchedule &schedule) {
  KILN_TRY_VOID(requireStaticGroup(cx.group, "a GPU transpose through shared tiles"));
  const ir::Shape &shape = cx.root()->type().shape;
  std::optional<TransposedRead> read = findTransposedRead(cx.group);
  if (!read || !read->stageable || product(shape) == 0)
    return lowerGpuPointwise(cx, GpuPointwiseSchedule{.vectorWidth = 1});
  int64_t tile = schedule.tile, rows = schedule.rowsPerPass;
  TransposeTiles tiles(*read, shape, tile);
  size_t q = tiles.q, last = tiles.last;
  int64_t pitch = tile + 1; // the padding element shifts each tile row by one bank

  return gpuNest(cx, product(tiles.extents), tile, rows, [&](const GpuThread &t) -> Expected<StmtPtr> {
    BufferPtr staged = sharedBuffer(cx, "tile", tiles.operand->type().dtype, tile * pitch);
    TransposeTiles::Tile at = tiles.at(t.block);
    ExprPtr qBegin = mul(at.qTile, kir::index(tile));
    ExprPtr lBegin = mul(at.lastTile, kir::index(tile));
    auto inside = [&](const ExprPtr &a, const ExprPtr &b) {
      ExprPtr cond = nullptr;
      if (shape[q] % tile != 0)
        cond = lt(a, kir::index(shape[q]));
      if (shape[last] % tile != 0) {
        ExprPtr c = lt(b, kir::index(shape[last]));
        cond = cond ? logicalAnd(cond, c) : c;
      }
      return cond;
    };
    auto guarded = [&](ExprPtr cond, StmtPtr body) { return cond ? ifThen(cond, body) : body; };

    KILN_TRY(StmtPtr stage, loop(cx.names, "r", tile / rows, ForKind::Unrolled, [&](ExprPtr r) -> Expected<StmtPtr> {
      ExprPtr bLocal = add(t.y, mul(r, kir::index(rows)));
      ExprPtr a = add(qBegin, t.x), b = add(lBegin, bLocal);
      KILN_TRY(ExprPtr value, tiles.operandAt(cx, at.index, a, b));
      return guarded(inside(a, b), storeBound(staged, add(mul(bLocal, kir::index(pitch)), t.x), value, cx.names));
    }));
    tiles.readFromTile(cx, *read, staged, qBegin, lBegin, pitch);
    KILN_TRY(StmtPtr write, loop(cx.names, "r", tile / rows, ForKind::Unrolled, [&](ExprPtr r) -> Expected<StmtPtr> {
      ExprPtr a = add(qBegin, add(t.y, mul(r, kir::index(rows))));
      ExprPtr b = add(lBegin, t.x);
      std::vector<ExprPtr> index = at.index;
      index[q] = a;
      index[last] = b;
      KILN_TRY(StmtPtr body, cx.storeRoot(index));
      return guarded(inside(a, b), body);
    }));
    return seq({stage, barrier(), write});
  });
}

} // namespace kiln::lower
