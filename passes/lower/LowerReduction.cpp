// Reduction groups (reduce_sum/mean/max/min/prod, argmax/argmin) with their
// prologue and epilogue. The reduction (its plan, accumulator, elements and
// result) is shared; the targets differ in how output elements bind.
// CPU: when the innermost input axis is reduced, each output element is one
// task that accumulates into vectorWidth partial accumulators; when it is
// kept, a task owns a block of the innermost axis and accumulates a whole
// block per reduced element, so loads stay contiguous. GPU: inner reductions
// (the innermost input axis reduced, or every axis) give each output row
// threadsPerBlock / rowsPerBlock threads that stride the row, then combine
// across it (reduceAcrossRow: warp shuffles, shared memory); outer reductions
// a thread per output element looping over the reduced axes, neighbouring
// threads reading neighbouring columns.
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {
bool isArg(OpKind kind) { return kind == OpKind::ArgMax || kind == OpKind::ArgMin; }
} // namespace

ReductionPlan planReduction(const ir::Node &anchor) {
  ReductionPlan plan{&anchor, anchor.operand(0), {}, ir::getBool(anchor.attrs(), "keepdims"),
                     anchor.kind(), anchor.operand(0)->type().dtype, 1};
  const ir::Shape &shape = plan.input->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  plan.reduced.assign(shape.size(), false);
  std::vector<int64_t> axes;
  if (plan.kind == OpKind::ArgMax || plan.kind == OpKind::ArgMin)
    axes = {ir::getInt(anchor.attrs(), "axis")};
  else
    axes = ir::getInts(anchor.attrs(), "axes");
  for (int64_t axis : axes) {
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    plan.reduced[a] = true;
    plan.count *= shape[a];
  }
  return plan;
}

AccumulatorSpec reductionSpec(const ReductionPlan &plan) {
  switch (plan.kind) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean: return sumSpec(sumType(plan.inputType));
  case OpKind::ReduceProd: return productSpec(sumType(plan.inputType));
  case OpKind::ReduceMax: return extremumSpec(computeType(plan.inputType), true);
  case OpKind::ReduceMin: return extremumSpec(computeType(plan.inputType), false);
  case OpKind::ArgMax: return argExtremumSpec(computeType(plan.inputType), true);
  case OpKind::ArgMin: return argExtremumSpec(computeType(plan.inputType), false);
  default: break;
  }
  KILN_UNREACHABLE("reduction: unknown anchor");
}

State reductionElement(const ReductionPlan &plan, const AccumulatorSpec &spec, const ExprPtr &value,
                   const ExprPtr &axisIndex) {
  ExprPtr converted = cast(toCompute(value), spec.types[0]);
  if (isArg(plan.kind))
    return {converted, axisIndex};
  return {converted};
}

ExprPtr reductionResult(const ReductionPlan &plan, const State &state, const ExprPtr &count) {
  DType out = plan.anchor->type().dtype;
  switch (plan.kind) {
  case OpKind::ArgMax:
  case OpKind::ArgMin: return state[1];
  case OpKind::ReduceMean: {
    Type t = state[0]->type();
    // One rounding from the accumulator to the result dtype, as the reference rounds once.
    ExprPtr divisor = count ? cast(count, t) : constant(static_cast<double>(plan.count), t);
    return cast(div(state[0], divisor), Type::scalar(out));
  }
  default: return cast(state[0], Type::scalar(out));
  }
}

namespace {

/// A reduction anchor's plan and accumulator, and the pieces of its kernel
/// that do not depend on the target.
class ReductionOp {
public:
  explicit ReductionOp(KernelContext &cx)
      : kernel_(cx), plan_(planReduction(*cx.group.anchor)), spec_(reductionSpec(plan_)),
        shape_(plan_.input->type().shape) {}

protected:
  /// The full input index from kept and reduced indices.
  std::vector<ExprPtr> merged(std::span<const ExprPtr> kept, std::span<const ExprPtr> reduced) const {
    std::vector<ExprPtr> index(shape_.size());
    size_t nk = 0, nr = 0;
    for (size_t k = 0; k < shape_.size(); ++k)
      index[k] = plan_.reduced[k] ? reduced[nr++] : kept[nk++];
    return index;
  }

  /// The output index (the anchor's shape) of the kept input indices.
  std::vector<ExprPtr> outputIndex(std::span<const ExprPtr> inputIndex) const {
    std::vector<ExprPtr> out;
    for (size_t k = 0; k < shape_.size(); ++k) {
      if (!plan_.reduced[k])
        out.push_back(inputIndex[k]);
      else if (plan_.keepDims)
        out.push_back(kir::index(0));
    }
    return out;
  }

  /// The extents of the reduced axes as the run has them (constants where static).
  std::vector<ExprPtr> reducedRuntimeExtents() {
    std::vector<ExprPtr> extents;
    for (size_t k = 0; k < shape_.size(); ++k)
      if (plan_.reduced[k])
        extents.push_back(kernel_.sizes.dim(plan_.input, static_cast<int64_t>(k)));
    return extents;
  }

  /// The run's count of reduced elements when the leading axis is reduced and symbolic
  /// (reduce_mean divides by it), else nullptr: plan.count.
  ExprPtr runtimeCount() {
    if (shape_.empty() || !plan_.reduced[0] || plan_.input->type().size(0).isConstant())
      return nullptr;
    ExprPtr count = kir::index(1);
    for (const ExprPtr &extent : reducedRuntimeExtents())
      count = mul(count, extent);
    return count;
  }

  /// Stores the epilogue of `state` at the output element of `inputIndex`.
  Expected<StmtPtr> finish(const State &state, std::span<const ExprPtr> inputIndex) {
    ExprPtr value = reductionResult(plan_, state, runtimeCount());
    kernel_.emitter.overrideValue(plan_.anchor->result(),
                                  [value](std::span<const ExprPtr>) { return value; });
    return kernel_.storeRoot(outputIndex(inputIndex));
  }

  /// The index of the reduced axis (arg reductions) within an input index.
  ExprPtr axisIndex(std::span<const ExprPtr> index) const {
    for (size_t k = 0; k < shape_.size(); ++k)
      if (plan_.reduced[k])
        return index[k];
    return kir::index(0);
  }

  /// The input's element at `index` as an accumulator element.
  Expected<State> element(std::span<const ExprPtr> index) {
    KILN_TRY(ExprPtr value, kernel_.emitter.at(plan_.input, index));
    return reductionElement(plan_, spec_, value, axisIndex(index));
  }

  KernelContext &kernel_;
  ReductionPlan plan_;
  AccumulatorSpec spec_;
  const ir::Shape &shape_;
};

// ---- the CPU binding

class ReductionLowering : ReductionOp {
public:
  ReductionLowering(LowerContext &cx, const ReductionSchedule &schedule)
      : ReductionOp(cx), cx_(cx), schedule_(schedule) {}

  Expected<StmtPtr> lower() {
    if (product(cx_.root()->type().shape) == 0)
      return seq({});
    if (shape_.empty() || plan_.reduced.back())
      return innerReduction();
    return outerReduction();
  }

private:
  /// `count` kept elements at their upper bounds, as the run has them: only a kept leading
  /// axis can vary.
  ExprPtr keptCount(int64_t count) {
    if (!shape_.empty() && plan_.reduced[0])
      return kir::index(count);
    return cx_.sizes.withLeadingAxis(plan_.input, count);
  }

  /// One task per output element (kept axes collapsed), accumulating over the
  /// reduced axes with the innermost one split over partial accumulators.
  Expected<StmtPtr> innerReduction() {
    std::vector<int64_t> keptExtents, reducedExtents;
    for (size_t k = 0; k < shape_.size(); ++k)
      (plan_.reduced[k] ? reducedExtents : keptExtents).push_back(shape_[k]);
    int64_t rows = product(keptExtents);
    bool parallel = runsInParallel(rows * std::max<int64_t>(plan_.count, 1), schedule_.minParallelWork);
    ExprPtr tasks = keptCount(rows);
    return taskLoop(cx_.names, tasks, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
      std::vector<ExprPtr> kept = delinearize(row, keptExtents);
      return accumulate(
          cx_.names, reducedExtents, schedule_.vectorWidth, spec_,
          [&](std::span<const ExprPtr> reducedIndex) {
            return element(merged(kept, reducedIndex));
          },
          [&](State state) -> Expected<StmtPtr> {
            std::vector<ExprPtr> zeros(reducedExtents.size(), kir::index(0));
            return finish(state, merged(kept, zeros));
          },
          reducedRuntimeExtents());
    });
  }

  /// Tasks over the kept axes but the innermost, times blocks of the
  /// innermost axis; each task keeps one accumulator per block element.
  Expected<StmtPtr> outerReduction() {
    size_t last = shape_.size() - 1;
    int64_t width = shape_[last];
    std::vector<int64_t> keptExtents, reducedExtents;
    for (size_t k = 0; k < last; ++k)
      (plan_.reduced[k] ? reducedExtents : keptExtents).push_back(shape_[k]);
    int64_t blockWidth = std::min<int64_t>(width, 1024);
    int64_t blocks = ceilDiv(width, blockWidth);
    ExprPtr tasks = mul(keptCount(product(keptExtents)), kir::index(blocks));
    bool parallel = runsInParallel(product(keptExtents) * width * std::max<int64_t>(plan_.count, 1),
                                   schedule_.minParallelWork);
    return taskLoop(cx_.names, tasks, parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr row = blocks == 1 ? task : div(task, kir::index(blocks));
      std::vector<ExprPtr> kept = delinearize(row, keptExtents);
      ExprPtr begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      ExprPtr extent = blocks == 1 ? kir::index(width) : min(kir::index(blockWidth), sub(kir::index(width), begin));
      std::vector<BufferPtr> acc;
      for (const Type &type : spec_.types)
        acc.push_back(makeBuffer(cx_.names.name("acc"), type.dtype, blockWidth, MemScope::Local));
      auto index = [&](std::span<const ExprPtr> reducedIndex, ExprPtr column) {
        std::vector<ExprPtr> idx(shape_.size());
        size_t nk = 0, nr = 0;
        for (size_t k = 0; k < last; ++k)
          idx[k] = plan_.reduced[k] ? reducedIndex[nr++] : kept[nk++];
        idx[last] = add(begin, column);
        return idx;
      };
      auto loadState = [&](ExprPtr w) {
        State s;
        for (const BufferPtr &b : acc)
          s.push_back(load(b, w));
        return s;
      };
      auto storeState = [&](ExprPtr w, const State &s) {
        std::vector<StoreSpec> stores;
        for (size_t j = 0; j < acc.size(); ++j)
          stores.push_back({acc[j], w, s[j]});
        return storesBound(std::move(stores), cx_.names);
      };
      KILN_TRY(StmtPtr init, loop(cx_.names, "w", kir::index(0), extent, ForKind::Vectorized,
                                  [&](ExprPtr w) -> Expected<StmtPtr> { return storeState(w, spec_.init); }));
      KILN_TRY(StmtPtr body,
               loopNest(cx_.names, reducedRuntimeExtents(), ForKind::Serial,
                        [&](std::span<const ExprPtr> reducedIndex) -> Expected<StmtPtr> {
                          std::vector<ExprPtr> r(reducedIndex.begin(), reducedIndex.end());
                          return loop(cx_.names, "w", kir::index(0), extent, ForKind::Vectorized,
                                      [&](ExprPtr w) -> Expected<StmtPtr> {
                                        KILN_TRY(State e, element(index(r, w)));
                                        return storeState(w, spec_.fold(loadState(w), e));
                                      });
                        }));
      KILN_TRY(StmtPtr done, loop(cx_.names, "w", kir::index(0), extent, ForKind::Vectorized,
                                  [&](ExprPtr w) -> Expected<StmtPtr> {
        std::vector<ExprPtr> zeros(reducedExtents.size(), kir::index(0));
        return letsBound("r", loadState(w), cx_.names, [&](State s) { return finish(s, index(zeros, w)); });
      }));
      StmtPtr result = seq({init, body, done});
      for (size_t j = acc.size(); j-- > 0;)
        result = allocate(acc[j], result);
      return result;
    });
  }

  LowerContext &cx_;
  const ReductionSchedule &schedule_;
};

// ---- the GPU binding

class GpuReductionLowering : ReductionOp {
public:
  GpuReductionLowering(GpuLowerContext &cx, const GpuReductionSchedule &schedule)
      : ReductionOp(cx), cx_(cx), schedule_(schedule),
        vectorInputs_(vectorReadInputs(cx.group, plan_.input)) {
    for (size_t k = 0; k < shape_.size(); ++k)
      (plan_.reduced[k] ? reducedExtents_ : keptExtents_).push_back(shape_[k]);
  }

  Expected<StmtPtr> lower() {
    if (product(cx_.root()->type().shape) == 0)
      return gpuNest(cx_, 1, 1, 1, [](const GpuThread &) -> Expected<StmtPtr> { return seq({}); });
    if (!shape_.empty() && plan_.reduced.front())
      KILN_TRY_VOID(requireStaticGroup(cx_.group, "a GPU reduction over its leading axis"));
    if (shape_.empty() || plan_.reduced.back())
      return innerReduction();
    return outerReduction();
  }

  /// The kept elements below `count` (every one when the grid covers exactly `count`): a
  /// symbolic leading axis is kept, and the grid covers its largest extent.
  ExprPtr keptBelow(const ExprPtr &at, int64_t count, bool gridExact) {
    ExprPtr runCount = cx_.sizes.withLeadingAxis(plan_.input, count);
    if (gridExact && as<IntImm>(*runCount))
      return nullptr;
    return lt(at, runCount);
  }

private:
  /// The accumulator element of the input at kept and reduced indices.
  Expected<State> element(std::span<const ExprPtr> kept, std::span<const ExprPtr> reduced) {
    return ReductionOp::element(merged(kept, reduced));
  }

  /// Stores the epilogue of `state` at the output element of `kept`.
  Expected<StmtPtr> finish(const State &state, std::span<const ExprPtr> kept) {
    std::vector<ExprPtr> zeros(reducedExtents_.size(), kir::index(0));
    return ReductionOp::finish(state, merged(kept, zeros));
  }

  Expected<StmtPtr> innerReduction() {
    KILN_TRY(int64_t width, threadsPerRow(cx_.group, schedule_.threadsPerBlock,
                                          schedule_.rowsPerBlock, cx_.target));
    int64_t rowsPerBlock = schedule_.rowsPerBlock;
    int64_t rows = product(keptExtents_), length = plan_.count;
    int64_t blocks = ceilDiv(rows, rowsPerBlock);
    return gpuNest(cx_, blocks, width, rowsPerBlock, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr row = rowsPerBlock == 1 ? t.block : add(mul(t.block, kir::index(rowsPerBlock)), t.y);
      ExprPtr valid = keptBelow(row, rows, rows % rowsPerBlock == 0);
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
      ExprPtr valid = keptBelow(column, outputs, blocks * threads == outputs);
      return valid ? ifThen(valid, body) : body;
    });
  }

  GpuLowerContext &cx_;
  const GpuReductionSchedule &schedule_;
  std::set<const ir::Value *> vectorInputs_;
  std::vector<int64_t> keptExtents_, reducedExtents_;
};

} // namespace

Expected<StmtPtr> lowerReduction(LowerContext &cx, const ReductionSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a reduction group has an anchor");
  return ReductionLowering(cx, schedule).lower();
}

Expected<StmtPtr> lowerGpuReduction(GpuLowerContext &cx, const GpuReductionSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a reduction group has an anchor");
  return GpuReductionLowering(cx, schedule).lower();
}

} // namespace kiln::lower
