// Pointwise groups: every output element stored from the element function,
// over a flat index for groups of same-shape elementwise ops (isFlatPointwise)
// and over the output's own index otherwise. The targets differ in how the
// elements bind: on the CPU the outer axes collapse into one (parallel) task
// loop and the innermost is vectorized; on the GPU a grid-stride loop walks
// vectors of vectorWidth consecutive elements (16-byte loads of same-shape
// inputs and 16-byte stores where the group allows) with a scalar tail, on a
// grid bounded by maxBlocksPerSm x SMs. Transpose-like groups: LowerTranspose.cpp.
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

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

std::vector<ExprPtr> flatIndex(const ir::Shape &shape, ExprPtr flat) {
  // The last axis of extent > 1: axes after it have extent 1, so its stride is 1, and an
  // operand read there is not taken for a broadcast (a size-1 axis is read at 0), which the
  // last axis of [4, 1] would be.
  size_t axis = shape.size() - 1;
  while (axis > 0 && shape[axis] == 1)
    --axis;
  std::vector<ExprPtr> index(shape.size(), kir::index(0));
  index[axis] = std::move(flat);
  return index;
}

namespace {

// ---- the CPU binding

/// Elements per parallel task of a flat loop: enough tasks for every core to
/// get several, none smaller than a few vectors.
int64_t flatBlock(int64_t n, int vectorWidth, int cores) {
  int64_t tasks = std::max(1, cores) * 4;
  int64_t block = ceilDiv(n, tasks);
  int64_t minBlock = int64_t{vectorWidth} * 64;
  block = std::max(block, minBlock);
  return ceilDiv(block, vectorWidth) * vectorWidth;
}

// Symbolic sizes: blocks and the parallel decision are the largest size's; the element count
// and so the number of tasks and the last one's extent are the run's.
Expected<StmtPtr> lowerFlat(LowerContext &cx, const PointwiseSchedule &schedule) {
  const ir::Shape &shape = cx.root()->type().shape;
  int64_t n = product(shape);
  ExprPtr count = cx.sizes.withLeadingAxis(cx.root(), n);
  auto element = [&](ExprPtr flat) -> Expected<StmtPtr> {
    KILN_TRY(ExprPtr value, cx.emitter.at(cx.root(), flatIndex(shape, flat)));
    return storeBound(cx.signature.out, flat, value, cx.names);
  };
  if (!runsInParallel(n, schedule.minParallelWork))
    return loop(cx.names, "i", kir::index(0), count, ForKind::Vectorized, element);
  int64_t block = flatBlock(n, schedule.vectorWidth, cx.target.cores);
  int64_t tasks = ceilDiv(n, block);
  ExprPtr taskCount = constIntValue(count)
                          ? kir::index(tasks)
                          : div(add(count, kir::index(block - 1)), kir::index(block));
  return taskLoop(cx.names, taskCount, true, [&](ExprPtr task) -> Expected<StmtPtr> {
    ExprPtr begin = mul(task, kir::index(block));
    ExprPtr extent = tasks == 1 ? count : min(kir::index(block), sub(count, begin));
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
  if (shape.size() == 1)
    KILN_TRY_VOID(requireStaticGroup(cx.group, "a CPU pointwise kernel over one broadcast axis"));
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

  ExprPtr tasks = mul(cx.sizes.withLeadingAxis(cx.root(), rows), kir::index(columnBlocks));
  return taskLoop(cx.names, tasks, parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
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

// ---- the GPU binding

namespace {

class PointwiseLowering {
public:
  PointwiseLowering(GpuLowerContext &cx, const GpuPointwiseSchedule &schedule)
      : cx_(cx), schedule_(schedule), shape_(cx.root()->type().shape), n_(product(shape_)),
        flat_(isFlatPointwise(cx.group)), vectorRead_(vectorReadInputs(cx.group, cx.root())) {}

  Expected<StmtPtr> lower() {
    if (n_ == 0 || shape_.empty())
      return gpuNest(cx_, 1, 1, 1, [&](const GpuThread &) -> Expected<StmtPtr> {
        if (n_ == 0)
          return seq({});
        return cx_.storeRoot({});
      });
    int64_t vw = schedule_.vectorWidth;
    // A leading axis sized at run time: the grid covers its largest extent and the threads
    // past the run's elements do nothing. Vectors must then divide the rest of a row of the
    // leading axis, so that every run's element count is whole vectors (no scalar tail).
    bool symbolic = hasSymbolicSizes(cx_.group);
    int64_t perLeading = symbolic ? n_ / shape_.front() : n_;
    // Vectors need every vector to lie in one row (flat groups have one row)
    // and start at a multiple of its width.
    vectors_ = vw > 1 && n_ >= vw && (flat_ || shape_.back() % vw == 0) &&
               (!symbolic || perLeading % vw == 0);
    width_ = vectors_ ? vw : 1;
    int64_t chunks = n_ / width_, tail = n_ - chunks * width_;
    ExprPtr runChunks = cx_.sizes.withLeadingAxis(cx_.root(), chunks);
    int64_t ept = schedule_.elementsPerThread;
    int64_t threads = std::min<int64_t>(schedule_.threadsPerBlock,
                                        ceilDiv(ceilDiv(chunks, ept), 32) * 32);
    threads = std::max<int64_t>(threads, ceilDiv(tail, 32) * 32);
    int64_t perBlock = threads * ept;
    int64_t maxBlocks = int64_t{cx_.target.numSms} * schedule_.maxBlocksPerSm;
    int64_t blocks = std::clamp<int64_t>(ceilDiv(chunks, perBlock), 1, maxBlocks);
    int64_t steps = ceilDiv(chunks, blocks * perBlock);
    bool exact = steps * blocks * perBlock == chunks && !symbolic;
    return gpuNest(cx_, blocks, threads, 1, [&](const GpuThread &t) -> Expected<StmtPtr> {
      KILN_TRY(StmtPtr main, loop(cx_.names, "s", steps, ForKind::Serial, [&](ExprPtr s) {
        return loop(cx_.names, "e", ept, ForKind::Unrolled, [&](ExprPtr e) -> Expected<StmtPtr> {
          ExprPtr step = add(mul(s, kir::index(ept)), e);
          ExprPtr chunk = add(mul(add(mul(step, kir::index(blocks)), t.block), kir::index(threads)), t.x);
          KILN_TRY(StmtPtr body, vectors_ ? vectorChunk(chunk) : scalarElement(chunk));
          return exact ? body : ifThen(lt(chunk, runChunks), body);
        });
      }));
      if (tail == 0)
        return main;
      ExprPtr global = add(mul(t.block, kir::index(threads)), t.x);
      KILN_TRY(StmtPtr rest, scalarElement(add(kir::index(chunks * width_), global)));
      return seq({main, ifThen(lt(global, kir::index(tail)), rest)});
    });
  }

private:
  std::vector<ExprPtr> indexOf(ExprPtr flat) const {
    return flat_ ? flatIndex(shape_, std::move(flat)) : delinearize(std::move(flat), shape_);
  }

  Expected<StmtPtr> scalarElement(ExprPtr flat) { return cx_.storeRoot(indexOf(std::move(flat))); }

  /// width_ consecutive elements from `chunk * width_`: inputs read at the
  /// output's index arrive by one vector load each, the results leave by one
  /// vector store.
  Expected<StmtPtr> vectorChunk(ExprPtr chunk) {
    return letsBound("v", {mul(chunk, kir::index(width_))}, cx_.names,
                     [&](State base) -> Expected<StmtPtr> {
      std::vector<StmtPtr> loads;
      std::vector<BufferPtr> registers;
      int lane = 0;
      // Rows hold whole vectors, so the vector's index is the first element's with the last axis advanced.
      std::vector<ExprPtr> first = indexOf(base[0]);
      for (const ir::Value *input : cx_.group.inputs) {
        if (!vectorRead_.contains(input))
          continue; // moved or broadcast along the row: read element by element
        const ir::Shape &inShape = input->type().shape;
        ExprPtr at = inShape == shape_ ? base[0] : linearIndex(broadcastIndex(first, inShape), inShape);
        BufferPtr reg = makeBuffer(cx_.names.name("vin"), input->type().dtype, width_, MemScope::Register);
        registers.push_back(reg);
        loads.push_back(store(reg, kir::index(0),
                              load(cx_.signature.buffers.at(input), at, static_cast<int>(width_))));
        cx_.emitter.overrideValue(input, [reg, &lane](std::span<const ExprPtr>) {
          return load(reg, kir::index(lane));
        });
      }
      BufferPtr result = makeBuffer(cx_.names.name("vout"), cx_.root()->type().dtype, width_, MemScope::Register);
      registers.push_back(result);
      std::vector<StmtPtr> body = loads;
      for (lane = 0; lane < width_; ++lane) {
        std::vector<ExprPtr> index = first;
        size_t axis = index.size() - 1;
        if (flat_)
          index = flatIndex(shape_, add(base[0], kir::index(lane)));
        else
          index[axis] = add(index[axis], kir::index(lane));
        KILN_TRY(ExprPtr value, cx_.emitter.at(cx_.root(), index));
        body.push_back(storeBound(result, kir::index(lane), value, cx_.names));
      }
      // Back to element loads for the scalar tail.
      for (const ir::Value *input : vectorRead_)
        cx_.emitter.overrideValue(input, [this, input](std::span<const ExprPtr> i) {
          return load(cx_.signature.buffers.at(input), linearIndex(i, input->type().shape));
        });
      body.push_back(store(cx_.signature.out, base[0], load(result, kir::index(0), static_cast<int>(width_))));
      StmtPtr stmt = seq(std::move(body));
      for (size_t r = registers.size(); r-- > 0;)
        stmt = allocate(registers[r], stmt);
      return stmt;
    });
  }

  GpuLowerContext &cx_;
  const GpuPointwiseSchedule &schedule_;
  const ir::Shape &shape_;
  int64_t n_;
  bool flat_;
  std::set<const ir::Value *> vectorRead_;
  bool vectors_ = false;
  int64_t width_ = 1;
};

} // namespace

Expected<StmtPtr> lowerGpuPointwise(GpuLowerContext &cx, const GpuPointwiseSchedule &schedule) {
  return PointwiseLowering(cx, schedule).lower();
}

} // namespace kiln::lower
