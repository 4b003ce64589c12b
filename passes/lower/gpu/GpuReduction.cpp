// Reduction groups on the GPU. Inner reductions (the innermost input axis
// reduced, or every axis): threadsPerBlock / rowsPerBlock threads per output
// row stride the row, then combine across the row (reduceAcrossRow). Outer
// reductions (innermost axis kept): a thread per output element loops over the
// reduced axes, neighbouring threads reading neighbouring columns.
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

class GpuReductionLowering {
public:
  GpuReductionLowering(GpuLowerContext &cx, const GpuReductionSchedule &schedule)
      : cx_(cx), schedule_(schedule), plan_(planReduction(*cx.group.anchor)),
        spec_(reductionSpec(plan_)), shape_(plan_.input->type().shape),
        vectorInputs_(vectorReadInputs(cx.group, plan_.input)) {
    for (size_t k = 0; k < shape_.size(); ++k)
      (plan_.reduced[k] ? reducedExtents_ : keptExtents_).push_back(shape_[k]);
  }

  Expected<StmtPtr> lower() {
    if (product(cx_.root()->type().shape) == 0)
      return gpuNest(cx_, 1, 1, 1, [](const GpuThread &) -> Expected<StmtPtr> { return seq({}); });
    if (shape_.empty() || plan_.reduced.back())
      return innerReduction();
    return outerReduction();
  }

private:
  /// The full input index from kept and reduced indices.
  std::vector<ExprPtr> merged(std::span<const ExprPtr> kept, std::span<const ExprPtr> reduced) const {
    std::vector<ExprPtr> index(shape_.size());
    size_t nk = 0, nr = 0;
    for (size_t k = 0; k < shape_.size(); ++k)
      index[k] = plan_.reduced[k] ? reduced[nr++] : kept[nk++];
    return index;
  }

  std::vector<ExprPtr> outputIndex(std::span<const ExprPtr> kept) const {
    std::vector<ExprPtr> out;
    size_t nk = 0;
    for (size_t k = 0; k < shape_.size(); ++k) {
      if (!plan_.reduced[k])
        out.push_back(kept[nk++]);
      else if (plan_.keepDims)
        out.push_back(kir::index(0));
    }
    return out;
  }

  Expected<State> element(std::span<const ExprPtr> kept, std::span<const ExprPtr> reduced) {
    std::vector<ExprPtr> index = merged(kept, reduced);
    KILN_TRY(ExprPtr value, cx_.emitter.at(plan_.input, index));
    ExprPtr axisIndex = reduced.empty() ? kir::index(0) : reduced[0];
    return reductionElement(plan_, spec_, value, axisIndex);
  }

  Expected<StmtPtr> finish(const State &state, std::span<const ExprPtr> kept) {
    ExprPtr value = reductionResult(plan_, state);
    cx_.emitter.overrideValue(plan_.anchor->result(), [value](std::span<const ExprPtr>) { return value; });
    return cx_.storeRoot(outputIndex(kept));
  }

  Expected<StmtPtr> innerReduction() {
    KILN_TRY(int64_t width, threadsPerRow(cx_.group, schedule_.threadsPerBlock,
                                          schedule_.rowsPerBlock, cx_.target));
    int64_t rowsPerBlock = schedule_.rowsPerBlock;
    int64_t rows = product(keptExtents_), length = plan_.count;
    int64_t blocks = ceilDiv(rows, rowsPerBlock);
    return gpuNest(cx_, blocks, width, rowsPerBlock, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr row = rowsPerBlock == 1 ? t.block : add(mul(t.block, kir::index(rowsPerBlock)), t.y);
      ExprPtr valid = rows % rowsPerBlock == 0 ? nullptr : lt(row, kir::index(rows));
      std::vector<ExprPtr> kept = delinearize(row, keptExtents_);
      RegisterState acc = registerState(cx_.names, "acc", spec_.types);
      // Every thread runs the same number of steps (the reduction after it
      // has barriers and shuffles); the elements themselves are guarded.
      int64_t vw = schedule_.vectorWidth;
      if (vw < 1 || shape_.empty() || shape_.back() % vw != 0)
        vw = 1;
      int64_t chunks = length / vw;
      KILN_TRY(StmtPtr steps, loop(cx_.names, "i", ceilDiv(chunks, width), ForKind::Serial,
                                   [&](ExprPtr i) -> Expected<StmtPtr> {
        ExprPtr c = add(mul(i, kir::index(width)), t.x);
        KILN_TRY(StmtPtr update, vw == 1 ? scalarUpdate(acc, kept, c) : vectorUpdate(acc, kept, c, vw));
        ExprPtr cond = chunks % width == 0 ? nullptr : lt(c, kir::index(chunks));
        if (valid)
          cond = cond ? logicalAnd(valid, cond) : valid;
        return cond ? ifThen(cond, update) : update;
      }));
      KILN_TRY(StmtPtr combine, reduceAcrossRow(cx_, t, spec_, acc.load(), [&](State total) -> Expected<StmtPtr> {
        KILN_TRY(StmtPtr write, finish(total, kept));
        ExprPtr cond = width == 1 ? nullptr : eq(t.x, kir::index(0));
        if (valid)
          cond = cond ? logicalAnd(valid, cond) : valid;
        return cond ? ifThen(cond, write) : write;
      }, /*everyThread=*/false));
      return acc.allocateAround(seq({acc.store(spec_.init, cx_.names), steps, combine}));
    });
  }

  /// Folds the reduced element at flat position `r` of the row.
  Expected<StmtPtr> scalarUpdate(const RegisterState &acc, std::span<const ExprPtr> kept, ExprPtr r) {
    std::vector<ExprPtr> reduced = delinearize(std::move(r), reducedExtents_);
    KILN_TRY(State e, element(kept, reduced));
    return acc.store(spec_.fold(acc.load(), e), cx_.names);
  }

  /// Folds the `vw` elements from flat position `chunk * vw` in index order;
  /// the inputs the reduced operand reads elementwise arrive by one vector
  /// load each (the innermost axis holds whole vectors, so they are aligned).
  Expected<StmtPtr> vectorUpdate(const RegisterState &acc, std::span<const ExprPtr> kept, ExprPtr chunk,
                                 int64_t vw) {
    return letsBound("v", {mul(std::move(chunk), kir::index(vw))}, cx_.names,
                     [&](State base) -> Expected<StmtPtr> {
      std::vector<ExprPtr> reduced = delinearize(base[0], reducedExtents_);
      std::vector<ExprPtr> first = merged(kept, reduced);
      std::vector<StmtPtr> body;
      std::vector<BufferPtr> registers;
      int64_t lane = 0;
      for (const ir::Value *input : vectorInputs_) {
        const ir::Shape &inShape = input->type().shape;
        BufferPtr reg = makeBuffer(cx_.names.name("vin"), input->type().dtype, vw, MemScope::Register);
        registers.push_back(reg);
        ExprPtr at = linearIndex(broadcastIndex(first, inShape), inShape);
        body.push_back(store(reg, kir::index(0),
                             load(cx_.signature.buffers.at(input), at, static_cast<int>(vw))));
        cx_.emitter.overrideValue(input, [reg, &lane](std::span<const ExprPtr>) {
          return load(reg, kir::index(lane));
        });
      }
      State state = acc.load();
      for (lane = 0; lane < vw; ++lane) {
        std::vector<ExprPtr> at = reduced;
        at.back() = add(at.back(), kir::index(lane));
        KILN_TRY(State e, element(kept, at));
        state = spec_.fold(state, e);
      }
      for (const ir::Value *input : vectorInputs_)
        cx_.emitter.overrideValue(input, [this, input](std::span<const ExprPtr> i) {
          return load(cx_.signature.buffers.at(input), linearIndex(i, input->type().shape));
        });
      body.push_back(acc.store(state, cx_.names));
      StmtPtr stmt = seq(std::move(body));
      for (size_t r = registers.size(); r-- > 0;)
        stmt = allocate(registers[r], stmt);
      return stmt;
    });
  }

  Expected<StmtPtr> outerReduction() {
    int64_t outputs = product(keptExtents_);
    int64_t threads = std::min<int64_t>(schedule_.threadsPerBlock, ceilDiv(outputs, 32) * 32);
    int64_t blocks = ceilDiv(outputs, threads);
    return gpuNest(cx_, blocks, threads, 1, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr column = add(mul(t.block, kir::index(threads)), t.x);
      std::vector<ExprPtr> kept = delinearize(column, keptExtents_);
      RegisterState acc = registerState(cx_.names, "acc", spec_.types);
      KILN_TRY(StmtPtr steps, loopNest(cx_.names, reducedExtents_, ForKind::Serial,
                                       [&](std::span<const ExprPtr> reduced) -> Expected<StmtPtr> {
        KILN_TRY(State e, element(kept, reduced));
        return acc.store(spec_.fold(acc.load(), e), cx_.names);
      }));
      KILN_TRY(StmtPtr done, letsBound("r", acc.load(), cx_.names, [&](State total) {
        return finish(total, kept);
      }));
      StmtPtr body = acc.allocateAround(seq({acc.store(spec_.init, cx_.names), steps, done}));
      return blocks * threads == outputs ? body : ifThen(lt(column, kir::index(outputs)), body);
    });
  }

  GpuLowerContext &cx_;
  const GpuReductionSchedule &schedule_;
  ReductionPlan plan_;
  AccumulatorSpec spec_;
  const ir::Shape &shape_;
  std::set<const ir::Value *> vectorInputs_;
  std::vector<int64_t> keptExtents_, reducedExtents_;
};

} // namespace

Expected<StmtPtr> lowerGpuReduction(GpuLowerContext &cx, const GpuReductionSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a reduction group has an anchor");
  return GpuReductionLowering(cx, schedule).lower();
}

} // namespace kiln::lower
