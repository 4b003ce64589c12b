// Transpose-like pointwise groups on the GPU: a block per tile x tile output
// tile, read along the operand's rows into a shared tile padded by one
// element (no bank conflicts on the strided side), a barrier, then written
// along the output's rows, so both global sides are coalesced.
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

namespace kiln::lower {

using namespace kiln::kir;

Expected<StmtPtr> lowerGpuTranspose(GpuLowerContext &cx, const GpuTransposeSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  std::optional<TransposedRead> read = findTransposedRead(cx.group);
  if (!read || !read->stageable || product(shape) == 0)
    return lowerGpuPointwise(cx, GpuPointwiseSchedule{.vectorWidth = 1});
  int64_t tile = schedule.tile, rows = schedule.rowsPerPass;
  size_t q = static_cast<size_t>(read->axis), last = shape.size() - 1;
  const ir::Value *operand = read->node->operand(0);
  const auto &perm = ir::getInts(read->node->attrs(), "perm");

  // Blocks over every axis but the two tiled ones, then the tile counts.
  std::vector<int64_t> extents;
  for (size_t k = 0; k < last; ++k)
    if (k != q)
      extents.push_back(shape[k]);
  extents.push_back(ceilDiv(shape[q], tile));
  extents.push_back(ceilDiv(shape[last], tile));
  int64_t pitch = tile + 1; // the padding element shifts each tile row by one bank

  return gpuNest(cx, product(extents), tile, rows, [&](const GpuThread &t) -> Expected<StmtPtr> {
    BufferPtr staged = sharedBuffer(cx, "tile", operand->type().dtype, tile * pitch);
    std::vector<ExprPtr> parts = delinearize(t.block, extents);
    std::vector<ExprPtr> index(shape.size());
    size_t next = 0;
    for (size_t k = 0; k < last; ++k)
      if (k != q)
        index[k] = parts[next++];
    ExprPtr qBegin = mul(parts[next], kir::index(tile));
    ExprPtr lBegin = mul(parts[next + 1], kir::index(tile));
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

    // Read phase: threads along x walk the q axis, contiguous in the operand.
    KILN_TRY(StmtPtr stage, loop(cx.names, "r", tile / rows, ForKind::Unrolled, [&](ExprPtr r) -> Expected<StmtPtr> {
      ExprPtr bLocal = add(t.y, mul(r, kir::index(rows)));
      ExprPtr a = add(qBegin, t.x), b = add(lBegin, bLocal);
      std::vector<ExprPtr> at = index;
      at[q] = a;
      at[last] = b;
      std::vector<ExprPtr> operandIndex(at.size());
      for (size_t k = 0; k < at.size(); ++k)
        operandIndex[static_cast<size_t>(perm[k])] = at[k];
      KILN_TRY(ExprPtr value, cx.emitter.at(operand, operandIndex));
      return guarded(inside(a, b), storeBound(staged, add(mul(bLocal, kir::index(pitch)), t.x), value, cx.names));
    }));
    cx.emitter.overrideValue(read->node->result(), [=](std::span<const ExprPtr> i) {
      return load(staged, add(mul(sub(i[last], lBegin), kir::index(pitch)), sub(i[q], qBegin)));
    });
    // Write phase: threads along x walk the output's last axis.
    KILN_TRY(StmtPtr write, loop(cx.names, "r", tile / rows, ForKind::Unrolled, [&](ExprPtr r) -> Expected<StmtPtr> {
      ExprPtr a = add(qBegin, add(t.y, mul(r, kir::index(rows))));
      ExprPtr b = add(lBegin, t.x);
      std::vector<ExprPtr> at = index;
      at[q] = a;
      at[last] = b;
      KILN_TRY(StmtPtr body, storeGpuRoot(cx, at));
      return guarded(inside(a, b), body);
    }));
    return seq({stage, barrier(), write});
  });
}

} // namespace kiln::lower
