// Row kernels: softmax and log_softmax along any axis, layer_norm over the
// trailing axes, each one kernel that makes several passes over a row (max,
// sum of exponentials, normalize; or mean, variance, normalize) with the
// prologue recomputed in every pass and the epilogue fused into the last.
#include "passes/lower/LowerKinds.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

class RowNormLowering {
public:
  RowNormLowering(LowerContext &cx, const RowNormSchedule &schedule)
      : cx_(cx), schedule_(schedule), anchor_(*cx.group.anchor), input_(anchor_.operand(0)),
        shape_(input_->type().shape), dtype_(input_->type().dtype), t_(computeType(dtype_)),
        axis_(static_cast<size_t>(wrapAxis(ir::getInt(anchor_.attrs(), "axis"),
                                           static_cast<int64_t>(shape_.size())))) {}

  Expected<StmtPtr> lower() {
    if (product(shape_) == 0)
      return seq({});
    if (anchor_.kind() == OpKind::LayerNorm)
      return layerNorm();
    if (product(std::span(shape_).subspan(axis_ + 1)) == 1)
      return softmaxRows();
    return softmaxColumns();
  }

private:
  bool logarithm() const { return anchor_.kind() == OpKind::LogSoftmax; }

  Expected<ExprPtr> x(std::span<const ExprPtr> index) {
    KILN_TRY(ExprPtr value, cx_.emitter.at(input_, index));
    return toCompute(value);
  }

  /// Stores the epilogue of the anchor's value `y` (compute type) at `index`.
  Expected<StmtPtr> finish(ExprPtr y, std::span<const ExprPtr> index) {
    ExprPtr value = fromCompute(std::move(y), dtype_);
    cx_.emitter.overrideValue(anchor_.result(), [value](std::span<const ExprPtr>) { return value; });
    return cx_.storeRoot(index);
  }

  /// softmax: exp(x - max) * (1 / sum); log_softmax: x - max - log(sum).
  ExprPtr normalized(const ExprPtr &value, const ExprPtr &max, const ExprPtr &scale) {
    ExprPtr shifted = sub(value, max);
    return logarithm() ? sub(shifted, scale) : mul(call(Intrinsic::Exp, {shifted}), scale);
  }
  /// The per-row constant `normalized` needs, from the f64 sum of exponentials.
  ExprPtr rowScale(const ExprPtr &sum) {
    ExprPtr s = logarithm() ? call(Intrinsic::Log, {sum})
                            : div(constant(1.0, sum->type()), sum);
    return cast(s, t_);
  }

  /// The normalized axis is innermost (or followed only by unit axes): one
  /// task per row, three passes over it, the first two with partial accumulators.
  Expected<StmtPtr> softmaxRows() {
    std::vector<int64_t> rowExtents;
    for (size_t k = 0; k < shape_.size(); ++k)
      if (k != axis_)
        rowExtents.push_back(shape_[k]);
    int64_t rows = product(rowExtents), length = shape_[axis_];
    bool parallel = runsInParallel(product(shape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, rows, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
      std::vector<ExprPtr> rowIndex = delinearize(row, rowExtents);
      auto at = [&](ExprPtr i) {
        std::vector<ExprPtr> index = rowIndex;
        index.insert(index.begin() + static_cast<std::ptrdiff_t>(axis_), i);
        return index;
      };
      auto element = [&](std::span<const ExprPtr> i) -> Expected<State> {
        KILN_TRY(ExprPtr v, x(at(i[0])));
        return State{v};
      };
      return accumulate(cx_.names, {length}, schedule_.vectorWidth, extremumSpec(t_, true), element,
                        [&](State max) -> Expected<StmtPtr> {
        auto exponential = [&](std::span<const ExprPtr> i) -> Expected<State> {
          KILN_TRY(ExprPtr v, x(at(i[0])));
          return State{cast(call(Intrinsic::Exp, {sub(v, max[0])}), Type::scalar(DType::F64))};
        };
        return accumulate(cx_.names, {length}, schedule_.vectorWidth,
                          sumSpec(Type::scalar(DType::F64)), exponential,
                          [&](State sum) -> Expected<StmtPtr> {
          return letsBound("s", {rowScale(sum[0])}, cx_.names, [&](State scale) {
            return loop(cx_.names, "i", length, ForKind::Vectorized, [&](ExprPtr i) -> Expected<StmtPtr> {
              std::vector<ExprPtr> index = at(i);
              KILN_TRY(ExprPtr v, x(index));
              return finish(normalized(v, max[0], scale[0]), index);
            });
          });
        });
      });
    });
  }

  /// The normalized axis has contiguous axes after it: a task owns a block of
  /// the innermost axis and keeps one running max and sum per column, so
  /// every pass reads rows of contiguous elements.
  Expected<StmtPtr> softmaxColumns() {
    size_t last = shape_.size() - 1;
    int64_t width = shape_[last], length = shape_[axis_];
    std::vector<int64_t> taskExtents;
    for (size_t k = 0; k < last; ++k)
      if (k != axis_)
        taskExtents.push_back(shape_[k]);
    int64_t blockWidth = std::min<int64_t>(width, 1024);
    int64_t blocks = ceilDiv(width, blockWidth);
    bool parallel = runsInParallel(product(shape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, product(taskExtents) * blocks, parallel,
                    [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr outer = blocks == 1 ? task : div(task, kir::index(blocks));
      std::vector<ExprPtr> outerIndex = delinearize(outer, taskExtents);
      ExprPtr begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      ExprPtr extent = blocks == 1 ? kir::index(width) : min(kir::index(blockWidth), sub(kir::index(width), begin));
      auto at = [&](ExprPtr i, ExprPtr w) {
        std::vector<ExprPtr> index(shape_.size());
        size_t next = 0;
        for (size_t k = 0; k < last; ++k)
          index[k] = k == axis_ ? i : outerIndex[next++];
        index[last] = add(begin, w);
        return index;
      };
      BufferPtr maxBuf = makeBuffer(cx_.names.name("max"), t_.dtype, blockWidth, MemScope::Local);
      BufferPtr sumBuf = makeBuffer(cx_.names.name("sum"), DType::F64, blockWidth, MemScope::Local);
      auto columns = [&](const BodyFn &body) {
        return loop(cx_.names, "w", kir::index(0), extent, ForKind::Vectorized, body);
      };
      auto overRows = [&](const std::function<Expected<StmtPtr>(ExprPtr, ExprPtr)> &body) {
        return loop(cx_.names, "i", length, ForKind::Serial, [&](ExprPtr i) {
          return columns([&](ExprPtr w) { return body(i, w); });
        });
      };
      KILN_TRY(StmtPtr init, columns([&](ExprPtr w) -> Expected<StmtPtr> {
        return seq({store(maxBuf, w, extremumInit(t_, true)),
                    store(sumBuf, w, constant(0.0, Type::scalar(DType::F64)))});
      }));
      KILN_TRY(StmtPtr maxPass, overRows([&](ExprPtr i, ExprPtr w) -> Expected<StmtPtr> {
        KILN_TRY(ExprPtr v, x(at(i, w)));
        return storeBound(maxBuf, w, foldExtremum(load(maxBuf, w), v, true), cx_.names);
      }));
      KILN_TRY(StmtPtr sumPass, overRows([&](ExprPtr i, ExprPtr w) -> Expected<StmtPtr> {
        KILN_TRY(ExprPtr v, x(at(i, w)));
        ExprPtr e = cast(call(Intrinsic::Exp, {sub(v, load(maxBuf, w))}), Type::scalar(DType::F64));
        return storeBound(sumBuf, w, add(load(sumBuf, w), e), cx_.names);
      }));
      // The per-column scale replaces the sum in place (still f64, rounded at use).
      KILN_TRY(StmtPtr scalePass, columns([&](ExprPtr w) -> Expected<StmtPtr> {
        return store(sumBuf, w, cast(rowScale(load(sumBuf, w)), Type::scalar(DType::F64)));
      }));
      KILN_TRY(StmtPtr writePass, overRows([&](ExprPtr i, ExprPtr w) -> Expected<StmtPtr> {
        std::vector<ExprPtr> index = at(i, w);
        KILN_TRY(ExprPtr v, x(index));
        return finish(normalized(v, load(maxBuf, w), cast(load(sumBuf, w), t_)), index);
      }));
      return allocate(maxBuf, allocate(sumBuf, seq({init, maxPass, sumPass, scalePass, writePass})));
    });
  }

  /// layer_norm: one task per row of the trailing axes [axis, rank): mean and
  /// variance accumulate in f64 (two passes, as the reference computes
  /// them), then one pass normalizes, scales and shifts in the compute type.
  Expected<StmtPtr> layerNorm() {
    std::vector<int64_t> rowExtents(shape_.begin(), shape_.begin() + static_cast<std::ptrdiff_t>(axis_));
    std::vector<int64_t> inner(shape_.begin() + static_cast<std::ptrdiff_t>(axis_), shape_.end());
    int64_t rows = product(rowExtents), length = product(inner);
    double epsilon = ir::getFloat(anchor_.attrs(), "epsilon");
    Type f64 = Type::scalar(DType::F64);
    bool parallel = runsInParallel(product(shape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, rows, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
      std::vector<ExprPtr> rowIndex = delinearize(row, rowExtents);
      auto at = [&](std::span<const ExprPtr> i) {
        std::vector<ExprPtr> index = rowIndex;
        index.insert(index.end(), i.begin(), i.end());
        return index;
      };
      auto wide = [&](std::span<const ExprPtr> i) -> Expected<ExprPtr> {
        KILN_TRY(ExprPtr v, x(at(i)));
        return cast(v, f64);
      };
      auto count = constant(static_cast<double>(length), f64);
      return accumulate(cx_.names, inner, schedule_.vectorWidth, sumSpec(f64),
                        [&](std::span<const ExprPtr> i) -> Expected<State> {
                          KILN_TRY(ExprPtr v, wide(i));
                          return State{v};
                        },
                        [&](State sum) -> Expected<StmtPtr> {
        return letsBound("mean", {div(sum[0], count)}, cx_.names, [&](State mean) {
          auto squares = [&](std::span<const ExprPtr> i) -> Expected<State> {
            KILN_TRY(ExprPtr v, wide(i));
            ExprPtr d = sub(v, mean[0]);
            return State{mul(d, d)};
          };
          return accumulate(cx_.names, inner, schedule_.vectorWidth, sumSpec(f64), squares,
                            [&](State squared) -> Expected<StmtPtr> {
            ExprPtr variance = div(squared[0], count);
            ExprPtr inverse = div(constant(1.0, f64),
                                  call(Intrinsic::Sqrt, {add(variance, constant(epsilon, f64))}));
            return letsBound("n", {cast(mean[0], t_), cast(inverse, t_)}, cx_.names,
                             [&](State stats) {
              return loopNest(cx_.names, inner, ForKind::Vectorized,
                              [&](std::span<const ExprPtr> i) -> Expected<StmtPtr> {
                std::vector<ExprPtr> index = at(i);
                KILN_TRY(ExprPtr v, x(index));
                KILN_TRY(ExprPtr scale, cx_.emitter.at(anchor_.operand(1), i));
                KILN_TRY(ExprPtr bias, cx_.emitter.at(anchor_.operand(2), i));
                ExprPtr y = add(mul(mul(sub(v, stats[0]), stats[1]), toCompute(scale)), toCompute(bias));
                return finish(y, index);
              });
            });
          });
        });
      });
    });
  }

  LowerContext &cx_;
  const RowNormSchedule &schedule_;
  const ir::Node &anchor_;
  const ir::Value *input_;
  const ir::Shape &shape_;
  DType dtype_;
  Type t_;
  size_t axis_;
};

} // namespace

Expected<StmtPtr> lowerRowNorm(LowerContext &cx, const RowNormSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a row-norm group has an anchor");
  return RowNormLowering(cx, schedule).lower();
}

} // namespace kiln::lower
