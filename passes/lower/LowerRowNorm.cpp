// Row kernels: softmax and log_softmax along any axis, layer_norm over the
// trailing axes, each one kernel that makes several passes over a row (max,
// sum of exponentials, normalize; or mean, variance, normalize) with the
// prologue recomputed in every pass and the epilogue fused into the last. The
// op (its reads, the normalization and layer_norm's statistics) is shared; the
// targets differ in how rows bind. CPU: a (parallel) task per row with
// vectorized partial accumulators, softmax on a non-innermost axis a task per
// block of columns. GPU: threadsPerBlock / rowsPerBlock threads per row, each
// pass's totals combined across the row (warp shuffles, shared memory), then
// the write pass; softmax on a non-innermost axis a thread per column.
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// What a row-norm anchor computes, decoded once, and the pieces of its
/// kernel that do not depend on the target.
class RowNormOp {
public:
  explicit RowNormOp(KernelContext &cx)
      : kernel_(cx), anchor_(*cx.group.anchor), input_(anchor_.operand(0)),
        shape_(input_->type().shape), dtype_(input_->type().dtype), t_(computeType(dtype_)),
        axis_(static_cast<size_t>(wrapAxis(ir::getInt(anchor_.attrs(), "axis"),
                                           static_cast<int64_t>(shape_.size())))) {}

protected:
  bool logarithm() const { return anchor_.kind() == OpKind::LogSoftmax; }

  /// The input's element at `index` in the compute type.
  Expected<ExprPtr> x(std::span<const ExprPtr> index) {
    KILN_TRY(ExprPtr value, kernel_.emitter.at(input_, index));
    return toCompute(value);
  }

  /// Stores the epilogue of the anchor's value `y` (compute type) at `index`.
  Expected<StmtPtr> finish(ExprPtr y, std::span<const ExprPtr> index) {
    ExprPtr value = fromCompute(std::move(y), dtype_);
    kernel_.emitter.overrideValue(anchor_.result(), [value](std::span<const ExprPtr>) { return value; });
    return kernel_.storeRoot(index);
  }

  /// softmax: exp(x - max) * (1 / sum); log_softmax: x - max - log(sum).
  ExprPtr normalized(const ExprPtr &value, const ExprPtr &max, const ExprPtr &scale) {
    ExprPtr shifted = sub(value, max);
    return logarithm() ? sub(shifted, scale) : mul(call(Intrinsic::Exp, {shifted}), scale);
  }
  /// The per-row constant `normalized` needs, from the f64 sum of exponentials.
  ExprPtr rowScale(const ExprPtr &sum) {
    ExprPtr s = logarithm() ? call(Intrinsic::Log, {sum}) : div(constant(1.0, sum->type()), sum);
    return cast(s, t_);
  }

  /// layer_norm's 1 / sqrt(variance + epsilon) (f64) from the f64 sum of squared deviations.
  ExprPtr inverseDeviation(const ExprPtr &squared, const ExprPtr &count) const {
    Type f64 = Type::scalar(DType::F64);
    double epsilon = ir::getFloat(anchor_.attrs(), "epsilon");
    ExprPtr variance = div(squared, count);
    return div(constant(1.0, f64), call(Intrinsic::Sqrt, {add(variance, constant(epsilon, f64))}));
  }

  /// Stores layer_norm's result at `index` (`i`: its position in the row's
  /// trailing axes) from stats = (mean, inverse deviation) in the compute type.
  Expected<StmtPtr> layerNormElement(std::span<const ExprPtr> i, std::span<const ExprPtr> index,
                                     const State &stats) {
    KILN_TRY(ExprPtr v, x(index));
    KILN_TRY(ExprPtr scale, kernel_.emitter.at(anchor_.operand(1), i));
    KILN_TRY(ExprPtr bias, kernel_.emitter.at(anchor_.operand(2), i));
    ExprPtr y = add(mul(mul(sub(v, stats[0]), stats[1]), toCompute(scale)), toCompute(bias));
    return finish(y, index);
  }

  KernelContext &kernel_;
  const ir::Node &anchor_;
  const ir::Value *input_;
  const ir::Shape &shape_;
  DType dtype_;
  Type t_;
  size_t axis_;
};

// ---- the CPU binding

class RowNormLowering : RowNormOp {
public:
  RowNormLowering(LowerContext &cx, const RowNormSchedule &schedule)
      : RowNormOp(cx), cx_(cx), schedule_(schedule) {}

  Expected<StmtPtr> lower() {
    if (product(shape_) == 0)
      return seq({});
    if (axis_ == 0)
      KILN_TRY_VOID(requireStaticGroup(cx_.group, "a CPU row kernel over its leading axis"));
    if (anchor_.kind() == OpKind::LayerNorm)
      return layerNorm();
    if (product(std::span(shape_).subspan(axis_ + 1)) == 1)
      return softmaxRows();
    return softmaxColumns();
  }

private:
  /// The normalized axis is innermost (or followed only by unit axes): one
  /// task per row, three passes over it, the first two with partial accumulators.
  Expected<StmtPtr> softmaxRows() {
    std::vector<int64_t> rowExtents;
    for (size_t k = 0; k < shape_.size(); ++k)
      if (k != axis_)
        rowExtents.push_back(shape_[k]);
    int64_t rows = product(rowExtents), length = shape_[axis_];
    bool parallel = runsInParallel(product(shape_), schedule_.minParallelWork);
    ExprPtr tasks = cx_.sizes.withLeadingAxis(input_, rows);
    return taskLoop(cx_.names, tasks, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
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
    ExprPtr tasks = mul(cx_.sizes.withLeadingAxis(input_, product(taskExtents)),
                        kir::index(blocks));
    return taskLoop(cx_.names, tasks, parallel,
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
    Type f64 = Type::scalar(DType::F64);
    bool parallel = runsInParallel(product(shape_), schedule_.minParallelWork);
    ExprPtr tasks = cx_.sizes.withLeadingAxis(input_, rows);
    return taskLoop(cx_.names, tasks, parallel, [&](ExprPtr row) -> Expected<StmtPtr> {
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
            ExprPtr inverse = inverseDeviation(squared[0], count);
            return letsBound("n", {cast(mean[0], t_), cast(inverse, t_)}, cx_.names,
                             [&](State stats) {
              return loopNest(cx_.names, inner, ForKind::Vectorized,
                              [&](std::span<const ExprPtr> i) -> Expected<StmtPtr> {
                return layerNormElement(i, at(i), stats);
              });
            });
          });
        });
      });
    });
  }

  LowerContext &cx_;
  const RowNormSchedule &schedule_;
};

// ---- the GPU binding

class GpuRowNormLowering : RowNormOp {
public:
  GpuRowNormLowering(GpuLowerContext &cx, const GpuRowNormSchedule &schedule)
      : RowNormOp(cx), cx_(cx), schedule_(schedule),
        vectorInputs_(vectorReadInputs(cx.group, input_)) {}

  Expected<StmtPtr> lower() {
    if (product(shape_) == 0)
      return gpuNest(cx_, 1, 1, 1, [](const GpuThread &) -> Expected<StmtPtr> { return seq({}); });
    if (axis_ == 0)
      KILN_TRY_VOID(requireStaticGroup(cx_.group, "a GPU row kernel over its leading axis"));
    if (anchor_.kind() == OpKind::LayerNorm) {
      std::vector<int64_t> outer(shape_.begin(), shape_.begin() + static_cast<std::ptrdiff_t>(axis_));
      std::vector<int64_t> inner(shape_.begin() + static_cast<std::ptrdiff_t>(axis_), shape_.end());
      return rows(outer, inner, [&](const RowContext &row) { return layerNorm(row); });
    }
    if (product(std::span(shape_).subspan(axis_ + 1)) == 1) {
      std::vector<int64_t> outer;
      for (size_t k = 0; k < shape_.size(); ++k)
        if (k != axis_)
          outer.push_back(shape_[k]);
      return rows(outer, {shape_[axis_]}, [&](const RowContext &row) { return softmaxRow(row); });
    }
    return softmaxColumns();
  }

private:
  /// What one thread knows about its row.
  struct RowContext {
    const GpuThread *thread;
    std::vector<ExprPtr> outer; ///< the row's index over the outer extents
    ExprPtr valid;              ///< nullptr: always a real row
    int64_t width, length;
    std::vector<int64_t> inner; ///< the row's extents
    /// The full input index of the row's element at flat position `r`.
    std::vector<ExprPtr> at(const ExprPtr &r) const {
      std::vector<ExprPtr> i = delinearize(r, inner);
      return combine(i);
    }
    std::function<std::vector<ExprPtr>(std::span<const ExprPtr>)> combine;
    int64_t vectorWidth = 1; ///< consecutive elements per thread per step
  };
  using RowBodyFn = std::function<Expected<StmtPtr>(const RowContext &)>;

  /// Rows over `outer` (rowsPerBlock per block), each of the elements `inner`
  /// (row-major after the outer axes), threadsPerBlock / rowsPerBlock threads per row.
  Expected<StmtPtr> rows(const std::vector<int64_t> &outer, const std::vector<int64_t> &inner,
                         const RowBodyFn &body) {
    KILN_TRY(int64_t width, threadsPerRow(cx_.group, schedule_.threadsPerBlock,
                                          schedule_.rowsPerBlock, cx_.target));
    int64_t rowsPerBlock = schedule_.rowsPerBlock, count = product(outer);
    return gpuNest(cx_, ceilDiv(count, rowsPerBlock), width, rowsPerBlock,
                   [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr row = rowsPerBlock == 1 ? t.block : add(mul(t.block, kir::index(rowsPerBlock)), t.y);
      // A symbolic leading axis (one of the outer axes): the grid covers its largest extent,
      // and the rows past the run's are not real.
      ExprPtr runCount = cx_.sizes.withLeadingAxis(input_, count);
      bool exact = count % rowsPerBlock == 0 && as<IntImm>(*runCount) != nullptr;
      RowContext cxRow{&t,     delinearize(row, outer), exact ? nullptr : lt(row, runCount),
                       width,  product(inner),          inner,
                       nullptr};
      bool layer = anchor_.kind() == OpKind::LayerNorm;
      size_t axis = axis_;
      // Vectors run along the innermost input axis, which must be the row's.
      int64_t vw = schedule_.vectorWidth;
      if (vw > 1 && (layer || axis_ + 1 == shape_.size()) && inner.back() % vw == 0)
        cxRow.vectorWidth = vw;
      cxRow.combine = [outerIndex = cxRow.outer, layer, axis](std::span<const ExprPtr> i) {
        std::vector<ExprPtr> index = outerIndex;
        if (layer)
          index.insert(index.end(), i.begin(), i.end());
        else
          index.insert(index.begin() + static_cast<std::ptrdiff_t>(axis), i[0]);
        return index;
      };
      return body(cxRow);
    });
  }

  /// for each of the thread's elements r of the row (uniform trip count):
  /// body(r) if it exists. With vectors, a thread takes vectorWidth
  /// consecutive elements per step, the inputs x reads elementwise arriving
  /// by one vector load each.
  Expected<StmtPtr> overRow(const RowContext &row, const std::function<Expected<StmtPtr>(ExprPtr)> &body) {
    int64_t vw = row.vectorWidth, chunks = row.length / vw;
    return loop(cx_.names, "i", ceilDiv(chunks, row.width), ForKind::Serial,
                [&](ExprPtr i) -> Expected<StmtPtr> {
      ExprPtr c = add(mul(i, kir::index(row.width)), row.thread->x);
      KILN_TRY(StmtPtr stmt, vw == 1 ? body(c) : vectorChunk(row, c, body));
      ExprPtr cond = chunks % row.width == 0 ? nullptr : lt(c, kir::index(chunks));
      if (row.valid)
        cond = cond ? logicalAnd(row.valid, cond) : row.valid;
      return cond ? ifThen(cond, stmt) : stmt;
    });
  }

  Expected<StmtPtr> vectorChunk(const RowContext &row, ExprPtr chunk,
                                const std::function<Expected<StmtPtr>(ExprPtr)> &body) {
    int64_t vw = row.vectorWidth;
    return letsBound("v", {mul(std::move(chunk), kir::index(vw))}, cx_.names,
                     [&](State base) -> Expected<StmtPtr> {
      std::vector<ExprPtr> first = row.at(base[0]);
      std::vector<StmtPtr> stmts;
      std::vector<BufferPtr> registers;
      int64_t lane = 0;
      for (const ir::Value *input : vectorInputs_) {
        const ir::Shape &inShape = input->type().shape;
        BufferPtr reg = makeBuffer(cx_.names.name("vin"), input->type().dtype, vw, MemScope::Register);
        registers.push_back(reg);
        ExprPtr at = linearIndex(broadcastIndex(first, inShape), inShape);
        stmts.push_back(store(reg, kir::index(0), load(cx_.signature.buffers.at(input), at, static_cast<int>(vw))));
        cx_.emitter.overrideValue(input, [reg, &lane](std::span<const ExprPtr>) {
          return load(reg, kir::index(lane));
        });
      }
      for (lane = 0; lane < vw; ++lane) {
        KILN_TRY(StmtPtr s, body(add(base[0], kir::index(lane))));
        stmts.push_back(s);
      }
      for (const ir::Value *input : vectorInputs_)
        cx_.emitter.overrideValue(input, [this, input](std::span<const ExprPtr> i) {
          return load(cx_.signature.buffers.at(input), linearIndex(i, input->type().shape));
        });
      StmtPtr stmt = seq(std::move(stmts));
      for (size_t r = registers.size(); r-- > 0;)
        stmt = allocate(registers[r], stmt);
      return stmt;
    });
  }

  /// Accumulates element(r) over the row with `spec`, combines across the
  /// row's threads and continues with the row's total.
  Expected<StmtPtr> rowTotal(const RowContext &row, const AccumulatorSpec &spec,
                             const std::function<Expected<State>(ExprPtr)> &element,
                             const ResultFn &then) {
    RegisterState acc = registerState(cx_.names, "acc", spec.types);
    KILN_TRY(StmtPtr steps, overRow(row, [&](ExprPtr r) -> Expected<StmtPtr> {
      KILN_TRY(State e, element(r));
      return acc.store(spec.fold(acc.load(), e), cx_.names);
    }));
    KILN_TRY(StmtPtr combine, reduceAcrossRow(cx_, *row.thread, spec, acc.load(), then));
    return acc.allocateAround(seq({acc.store(spec.init, cx_.names), steps, combine}));
  }

  Expected<StmtPtr> softmaxRow(const RowContext &row) {
    Type f64 = Type::scalar(DType::F64);
    return rowTotal(row, extremumSpec(t_, true), [&](ExprPtr r) -> Expected<State> {
      KILN_TRY(ExprPtr v, x(row.at(r)));
      return State{v};
    }, [&](State max) -> Expected<StmtPtr> {
      return rowTotal(row, sumSpec(f64), [&](ExprPtr r) -> Expected<State> {
        KILN_TRY(ExprPtr v, x(row.at(r)));
        return State{cast(call(Intrinsic::Exp, {sub(v, max[0])}), f64)};
      }, [&](State sum) -> Expected<StmtPtr> {
        return letsBound("s", {rowScale(sum[0])}, cx_.names, [&](State scale) {
          return overRow(row, [&](ExprPtr r) -> Expected<StmtPtr> {
            std::vector<ExprPtr> index = row.at(r);
            KILN_TRY(ExprPtr v, x(index));
            return finish(normalized(v, max[0], scale[0]), index);
          });
        });
      });
    });
  }

  Expected<StmtPtr> layerNorm(const RowContext &row) {
    Type f64 = Type::scalar(DType::F64);
    ExprPtr count = constant(static_cast<double>(row.length), f64);
    auto wide = [&](ExprPtr r) -> Expected<ExprPtr> {
      KILN_TRY(ExprPtr v, x(row.at(r)));
      return cast(v, f64);
    };
    return rowTotal(row, sumSpec(f64), [&](ExprPtr r) -> Expected<State> {
      KILN_TRY(ExprPtr v, wide(r));
      return State{v};
    }, [&](State sum) -> Expected<StmtPtr> {
      return letsBound("mean", {div(sum[0], count)}, cx_.names, [&](State mean) {
        return rowTotal(row, sumSpec(f64), [&](ExprPtr r) -> Expected<State> {
          KILN_TRY(ExprPtr v, wide(r));
          ExprPtr d = sub(v, mean[0]);
          return State{mul(d, d)};
        }, [&](State squared) -> Expected<StmtPtr> {
          ExprPtr inverse = inverseDeviation(squared[0], count);
          return letsBound("n", {cast(mean[0], t_), cast(inverse, t_)}, cx_.names, [&](State stats) {
            return overRow(row, [&](ExprPtr r) -> Expected<StmtPtr> {
              std::vector<ExprPtr> i = delinearize(r, row.inner);
              return layerNormElement(i, row.combine(i), stats);
            });
          });
        });
      });
    });
  }

  /// softmax on an axis with contiguous axes after it: a thread per column
  /// (every index but the axis), neighbouring threads on neighbouring columns,
  /// three serial passes down the axis with the max and sum in registers.
  Expected<StmtPtr> softmaxColumns() {
    std::vector<int64_t> outer;
    for (size_t k = 0; k < shape_.size(); ++k)
      if (k != axis_)
        outer.push_back(shape_[k]);
    int64_t columns = product(outer), length = shape_[axis_];
    int64_t threads = std::min<int64_t>(schedule_.threadsPerBlock, ceilDiv(columns, 32) * 32);
    int64_t blocks = ceilDiv(columns, threads);
    Type f64 = Type::scalar(DType::F64);
    return gpuNest(cx_, blocks, threads, 1, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr column = add(mul(t.block, kir::index(threads)), t.x);
      std::vector<ExprPtr> outerIndex = delinearize(column, outer);
      auto at = [&](ExprPtr i) {
        std::vector<ExprPtr> index = outerIndex;
        index.insert(index.begin() + static_cast<std::ptrdiff_t>(axis_), i);
        return index;
      };
      RegisterState maxAcc = registerState(cx_.names, "max", {t_});
      RegisterState sumAcc = registerState(cx_.names, "sum", {f64});
      KILN_TRY(StmtPtr maxPass, loop(cx_.names, "i", length, ForKind::Serial, [&](ExprPtr i) -> Expected<StmtPtr> {
        KILN_TRY(ExprPtr v, x(at(i)));
        return maxAcc.store({foldExtremum(maxAcc.load()[0], v, true)}, cx_.names);
      }));
      KILN_TRY(StmtPtr rest, letsBound("m", maxAcc.load(), cx_.names, [&](State max) -> Expected<StmtPtr> {
        KILN_TRY(StmtPtr sumPass, loop(cx_.names, "i", length, ForKind::Serial, [&](ExprPtr i) -> Expected<StmtPtr> {
          KILN_TRY(ExprPtr v, x(at(i)));
          ExprPtr e = cast(call(Intrinsic::Exp, {sub(v, max[0])}), f64);
          return sumAcc.store({add(sumAcc.load()[0], e)}, cx_.names);
        }));
        KILN_TRY(StmtPtr writePass, letsBound("s", {rowScale(sumAcc.load()[0])}, cx_.names, [&](State scale) {
          return loop(cx_.names, "i", length, ForKind::Serial, [&](ExprPtr i) -> Expected<StmtPtr> {
            std::vector<ExprPtr> index = at(i);
            KILN_TRY(ExprPtr v, x(index));
            return finish(normalized(v, max[0], scale[0]), index);
          });
        }));
        return seq({sumAcc.store({constant(0.0, f64)}, cx_.names), sumPass, writePass});
      }));
      StmtPtr body = maxAcc.allocateAround(sumAcc.allocateAround(
          seq({maxAcc.store({extremumInit(t_, true)}, cx_.names), maxPass, rest})));
      ExprPtr runColumns = cx_.sizes.withLeadingAxis(input_, columns);
      bool exact = blocks * threads == columns && as<IntImm>(*runColumns) != nullptr;
      return exact ? body : ifThen(lt(column, runColumns), body);
    });
  }

  GpuLowerContext &cx_;
  const GpuRowNormSchedule &schedule_;
  std::set<const ir::Value *> vectorInputs_;
};

} // namespace

Expected<StmtPtr> lowerRowNorm(LowerContext &cx, const RowNormSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a row-norm group has an anchor");
  return RowNormLowering(cx, schedule).lower();
}

Expected<StmtPtr> lowerGpuRowNorm(GpuLowerContext &cx, const GpuRowNormSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a row-norm group has an anchor");
  return GpuRowNormLowering(cx, schedule).lower();
}

} // namespace kiln::lower
