// Reduction groups (reduce_sum/mean/max/min/prod, argmax/argmin) with their
// prologue and epilogue. When the innermost input axis is reduced, each
// output element is one task that accumulates into vectorWidth partial
// accumulators; when it is kept, a task owns a block of the innermost axis and
// accumulates a whole block per reduced element, so loads stay contiguous.
#include "passes/lower/LowerKinds.h"

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

ExprPtr reductionResult(const ReductionPlan &plan, const State &state) {
  DType out = plan.anchor->type().dtype;
  switch (plan.kind) {
  case OpKind::ArgMax:
  case OpKind::ArgMin: return state[1];
  case OpKind::ReduceMean: {
    Type t = state[0]->type();
    // One rounding from the accumulator to the result dtype, as the reference rounds once.
    return cast(div(state[0], constant(static_cast<double>(plan.count), t)), Type::scalar(out));
  }
  default: return cast(state[0], Type::scalar(out));
  }
}

namespace {

class ReductionLowering {
public:
  ReductionLowering(LowerContext &cx, const ReductionSchedule &schedule)
      : cx_(cx), schedule_(schedule), plan_(planReduction(*cx.group.anchor)),
        spec_(reductionSpec(plan_)), shape_(plan_.input->type().shape) {}

  Expected<StmtPtr> lower() {
    if (product(cx_.root()->type().shape) == 0)
      return seq({});
    if (shape_.empty() || plan_.reduced.back())
      return innerReduction();
    return outerReduction();
  }

private:
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

  /// Stores the epilogue of `state` at the output element of `inputIndex`.
  Expected<StmtPtr> finish(const State &state, std::span<const ExprPtr> inputIndex) {
    ExprPtr value = reductionResult(plan_, state);
    cx_.emitter.overrideValue(plan_.anchor->result(),
                              [value](std::span<const ExprPtr>) { return value; });
    return cx_.storeRoot(outputIndex(inputIndex));
  }

  /// The index of the reduced axis (arg reductions) within an input index.
  ExprPtr axisIndex(std::span<const ExprPtr> index) const {
    for (size_t k = 0; k < shape_.size(); ++k)
      if (plan_.reduced[k])
        return index[k];
    return kir::index(0);
  }

  Expected<State> element(std::span<const ExprPtr> index) {
    KILN_TRY(ExprPtr value, cx_.emitter.at(plan_.input, index));
    return reductionElement(plan_, spec_, value, axisIndex(index));
  }

  /// One task per output element (kept axes collapsed), accumulating over the
  /// reduced axes with the innermost one split over partial accumulators.
  Expected<StmtPtr> innerReduction() {
    std::vector<int64_t> keptExtents, reducedExtents;
    for (size_t k = 0; k < shape_.size(); ++k)
      (plan_.reduced[k] ? reducedExtents : keptExtents).push_back(shape_[k]);
    int64_t rows = product(keptExtents);
    bool parallel = runsInParallel(rows * std::max<int64_t>(plan_.count, 1), schedule_.minParallelWork);
    return taskLoop(cx_.names, rows, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
      std::vector<ExprPtr> kept = delinearize(row, keptExtents);
      auto merged = [&](std::span<const ExprPtr> reducedIndex) {
        std::vector<ExprPtr> index(shape_.size());
        size_t nk = 0, nr = 0;
        for (size_t k = 0; k < shape_.size(); ++k)
          index[k] = plan_.reduced[k] ? reducedIndex[nr++] : kept[nk++];
        return index;
      };
      return accumulate(
          cx_.names, reducedExtents, schedule_.vectorWidth, spec_,
          [&](std::span<const ExprPtr> reducedIndex) { return element(merged(reducedIndex)); },
          [&](State state) -> Expected<StmtPtr> {
            std::vector<ExprPtr> zeros(reducedExtents.size(), kir::index(0));
            return finish(state, merged(zeros));
          });
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
    int64_t tasks = product(keptExtents) * blocks;
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
      KILN_TRY(StmtPtr body, loopNest(cx_.names, reducedExtents, ForKind::Serial,
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
  ReductionPlan plan_;
  AccumulatorSpec spec_;
  const ir::Shape &shape_;
};

} // namespace

Expected<StmtPtr> lowerReduction(LowerContext &cx, const ReductionSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a reduction group has an anchor");
  return ReductionLowering(cx, schedule).lower();
}

} // namespace kiln::lower
