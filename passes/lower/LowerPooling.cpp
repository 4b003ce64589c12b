// Pooling groups: max_pool2d and avg_pool2d (padding, stride,
// count_include_pad) and global_avg_pool, in nchw and nhwc. nchw tasks own
// one output row (n, c, oh) and vectorize over ow; nhwc tasks own one output
// pixel (n, oh, ow) and a block of channels, vectorized over c. Window bounds
// are folded into loop ranges and If conditions, so no load is predicated.
#include "passes/lower/LowerKinds.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

class PoolingLowering {
public:
  PoolingLowering(LowerContext &cx, const PoolingSchedule &schedule)
      : cx_(cx), schedule_(schedule), anchor_(*cx.group.anchor), input_(anchor_.operand(0)),
        inShape_(input_->type().shape), outShape_(anchor_.type().shape),
        dtype_(input_->type().dtype),
        nhwc_(ir::getString(anchor_.attrs(), "layout") == "nhwc") {}

  Expected<StmtPtr> lower() {
    if (product(outShape_) == 0)
      return seq({});
    if (anchor_.kind() == OpKind::GlobalAvgPool)
      return nhwc_ ? globalNhwc() : globalNchw();
    isMax_ = anchor_.kind() == OpKind::MaxPool2D;
    const auto &kernel = ir::getInts(anchor_.attrs(), "kernel");
    const auto &stride = ir::getInts(anchor_.attrs(), "stride");
    const auto &padding = ir::getInts(anchor_.attrs(), "padding");
    kh_ = kernel[0], kw_ = kernel[1], sh_ = stride[0], sw_ = stride[1];
    padTop_ = padding[0], padLeft_ = padding[2];
    countPadding_ = !isMax_ && ir::getBool(anchor_.attrs(), "count_include_pad");
    accType_ = isMax_ ? computeType(dtype_) : sumType(dtype_);
    return nhwc_ ? windowNhwc() : windowNchw();
  }

private:
  int64_t n() const { return inShape_[0]; }
  int64_t channels() const { return inShape_[nhwc_ ? 3 : 1]; }
  int64_t height() const { return inShape_[nhwc_ ? 1 : 2]; }
  int64_t width() const { return inShape_[nhwc_ ? 2 : 3]; }
  int64_t outHeight() const { return outShape_[nhwc_ ? 1 : 2]; }
  int64_t outWidth() const { return outShape_[nhwc_ ? 2 : 3]; }

  /// An index in the tensor's own axis order from logical (n, c, h, w).
  std::vector<ExprPtr> image(ExprPtr n, ExprPtr c, ExprPtr h, ExprPtr w) const {
    if (nhwc_)
      return {n, h, w, c};
    return {n, c, h, w};
  }

  Expected<ExprPtr> inputAt(std::vector<ExprPtr> index) {
    KILN_TRY(ExprPtr value, cx_.emitter.at(input_, index));
    return cast(toCompute(value), accType_);
  }

  ExprPtr fold(const ExprPtr &acc, const ExprPtr &value) const {
    return isMax_ ? foldExtremum(acc, value, true) : add(acc, value);
  }
  ExprPtr initValue() const { return isMax_ ? extremumInit(accType_, true) : constant(0.0, accType_); }

  /// The number of input elements a window covers along one axis, as an
  /// index expression of the window's first (possibly negative) position.
  static ExprPtr covered(const ExprPtr &first, int64_t kernel, int64_t size) {
    ExprPtr low = max(first, kir::index(0));
    ExprPtr high = min(add(first, kir::index(kernel)), kir::index(size));
    return sub(high, low);
  }

  /// The anchor's value from the accumulator and the window's first position.
  ExprPtr windowResult(const ExprPtr &acc, const ExprPtr &firstH, const ExprPtr &firstW) const {
    DType out = anchor_.type().dtype;
    if (isMax_)
      return cast(acc, Type::scalar(out));
    ExprPtr count = countPadding_ ? kir::index(kh_ * kw_)
                                  : mul(covered(firstH, kh_, height()), covered(firstW, kw_, width()));
    return cast(div(acc, cast(count, accType_)), Type::scalar(out));
  }

  Expected<StmtPtr> finish(ExprPtr value, std::vector<ExprPtr> outIndex) {
    cx_.emitter.overrideValue(anchor_.result(), [value](std::span<const ExprPtr>) { return value; });
    return cx_.storeRoot(outIndex);
  }

  /// nchw: a task per output row (n, c, oh) and block of ow; for each window
  /// row in the image and each window column, a vectorized loop over the
  /// output columns whose input column is in the image.
  Expected<StmtPtr> windowNchw() {
    int64_t ow = outWidth(), blockWidth = std::min<int64_t>(ow, 2048);
    int64_t blocks = ceilDiv(ow, blockWidth);
    std::vector<int64_t> rowExtents{n(), channels(), outHeight()};
    bool parallel = runsInParallel(product(outShape_) * kh_ * kw_, schedule_.minParallelWork);
    return taskLoop(cx_.names, product(rowExtents) * blocks, parallel,
                    [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr row = blocks == 1 ? task : div(task, kir::index(blocks));
      std::vector<ExprPtr> r = delinearize(row, rowExtents);
      ExprPtr begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      ExprPtr end = blocks == 1 ? kir::index(ow) : min(add(begin, kir::index(blockWidth)), kir::index(ow));
      ExprPtr firstH = sub(mul(r[2], kir::index(sh_)), kir::index(padTop_));
      BufferPtr acc = makeBuffer(cx_.names.name("acc"), accType_.dtype, blockWidth, MemScope::Local);
      auto columns = [&](ExprPtr from, ExprPtr to, const BodyFn &body) {
        return loop(cx_.names, "w", from, max(sub(to, from), kir::index(0)), ForKind::Vectorized, body);
      };
      KILN_TRY(StmtPtr init, columns(begin, end, [&](ExprPtr o) -> Expected<StmtPtr> {
        return store(acc, sub(o, begin), initValue());
      }));
      KILN_TRY(StmtPtr window, loop(cx_.names, "kh", kh_, ForKind::Serial, [&](ExprPtr kh) -> Expected<StmtPtr> {
        ExprPtr ih = add(firstH, kh);
        ExprPtr inside = logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height())));
        KILN_TRY(StmtPtr body, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
          // Output columns o with 0 <= o * sw - padLeft + kw < width.
          ExprPtr lowNumerator = max(sub(kir::index(padLeft_), kw), kir::index(0));
          ExprPtr first = div(add(lowNumerator, kir::index(sw_ - 1)), kir::index(sw_));
          ExprPtr highNumerator = max(sub(kir::index(width() + padLeft_), kw), kir::index(0));
          ExprPtr last = div(add(highNumerator, kir::index(sw_ - 1)), kir::index(sw_));
          return columns(max(first, begin), min(last, end), [&](ExprPtr o) -> Expected<StmtPtr> {
            ExprPtr iw = add(sub(mul(o, kir::index(sw_)), kir::index(padLeft_)), kw);
            KILN_TRY(ExprPtr v, inputAt(image(r[0], r[1], ih, iw)));
            ExprPtr slot = sub(o, begin);
            return storeBound(acc, slot, fold(load(acc, slot), v), cx_.names);
          });
        }));
        return ifThen(inside, body);
      }));
      KILN_TRY(StmtPtr done, columns(begin, end, [&](ExprPtr o) -> Expected<StmtPtr> {
        ExprPtr firstW = sub(mul(o, kir::index(sw_)), kir::index(padLeft_));
        ExprPtr value = windowResult(load(acc, sub(o, begin)), firstH, firstW);
        return finish(value, image(r[0], r[1], r[2], o));
      }));
      return allocate(acc, seq({init, window, done}));
    });
  }

  /// nhwc: a task per output pixel (n, oh, ow) and block of channels; the
  /// window's bounds are uniform over the block, so they are If conditions.
  Expected<StmtPtr> windowNhwc() {
    int64_t c = channels(), blockWidth = std::min<int64_t>(c, 1024);
    int64_t blocks = ceilDiv(c, blockWidth);
    std::vector<int64_t> pixelExtents{n(), outHeight(), outWidth()};
    bool parallel = runsInParallel(product(outShape_) * kh_ * kw_, schedule_.minParallelWork);
    return taskLoop(cx_.names, product(pixelExtents) * blocks, parallel,
                    [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr pixel = blocks == 1 ? task : div(task, kir::index(blocks));
      std::vector<ExprPtr> p = delinearize(pixel, pixelExtents);
      ExprPtr begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      ExprPtr extent = blocks == 1 ? kir::index(c) : min(kir::index(blockWidth), sub(kir::index(c), begin));
      ExprPtr firstH = sub(mul(p[1], kir::index(sh_)), kir::index(padTop_));
      ExprPtr firstW = sub(mul(p[2], kir::index(sw_)), kir::index(padLeft_));
      BufferPtr acc = makeBuffer(cx_.names.name("acc"), accType_.dtype, blockWidth, MemScope::Local);
      auto lanes = [&](const BodyFn &body) {
        return loop(cx_.names, "c", kir::index(0), extent, ForKind::Vectorized, body);
      };
      KILN_TRY(StmtPtr init, lanes([&](ExprPtr l) -> Expected<StmtPtr> { return store(acc, l, initValue()); }));
      KILN_TRY(StmtPtr window, loop(cx_.names, "kh", kh_, ForKind::Serial, [&](ExprPtr kh) -> Expected<StmtPtr> {
        ExprPtr ih = add(firstH, kh);
        KILN_TRY(StmtPtr body, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
          ExprPtr iw = add(firstW, kw);
          KILN_TRY(StmtPtr update, lanes([&](ExprPtr l) -> Expected<StmtPtr> {
            KILN_TRY(ExprPtr v, inputAt(image(p[0], add(begin, l), ih, iw)));
            return storeBound(acc, l, fold(load(acc, l), v), cx_.names);
          }));
          return ifThen(logicalAnd(ge(iw, kir::index(0)), lt(iw, kir::index(width()))), update);
        }));
        return ifThen(logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height()))), body);
      }));
      KILN_TRY(StmtPtr done, lanes([&](ExprPtr l) -> Expected<StmtPtr> {
        ExprPtr value = windowResult(load(acc, l), firstH, firstW);
        return finish(value, image(p[0], add(begin, l), p[1], p[2]));
      }));
      return allocate(acc, seq({init, window, done}));
    });
  }

  ExprPtr meanOf(const ExprPtr &sum) const {
    Type f64 = Type::scalar(DType::F64);
    return cast(div(sum, constant(static_cast<double>(height() * width()), f64)),
                Type::scalar(anchor_.type().dtype));
  }

  /// global_avg_pool, nchw: one task per (n, c), summing its contiguous plane.
  Expected<StmtPtr> globalNchw() {
    accType_ = sumType(dtype_);
    std::vector<int64_t> extents{n(), channels()};
    bool parallel = runsInParallel(product(inShape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, product(extents), parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
      std::vector<ExprPtr> nc = delinearize(task, extents);
      return accumulate(
          cx_.names, {height(), width()}, schedule_.vectorWidth, sumSpec(accType_),
          [&](std::span<const ExprPtr> hw) -> Expected<State> {
            KILN_TRY(ExprPtr v, inputAt(image(nc[0], nc[1], hw[0], hw[1])));
            return State{v};
          },
          [&](State sum) {
            return finish(meanOf(sum[0]), image(nc[0], nc[1], kir::index(0), kir::index(0)));
          });
    });
  }

  /// global_avg_pool, nhwc: a task per (n, block of channels), adding whole
  /// contiguous channel blocks pixel by pixel.
  Expected<StmtPtr> globalNhwc() {
    accType_ = sumType(dtype_);
    int64_t c = channels(), blockWidth = std::min<int64_t>(c, 1024);
    int64_t blocks = ceilDiv(c, blockWidth);
    bool parallel = runsInParallel(product(inShape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, n() * blocks, parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr batch = blocks == 1 ? task : div(task, kir::index(blocks));
      ExprPtr begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      ExprPtr extent = blocks == 1 ? kir::index(c) : min(kir::index(blockWidth), sub(kir::index(c), begin));
      BufferPtr acc = makeBuffer(cx_.names.name("acc"), accType_.dtype, blockWidth, MemScope::Local);
      auto lanes = [&](const BodyFn &body) {
        return loop(cx_.names, "c", kir::index(0), extent, ForKind::Vectorized, body);
      };
      KILN_TRY(StmtPtr init, lanes([&](ExprPtr l) -> Expected<StmtPtr> {
        return store(acc, l, constant(0.0, accType_));
      }));
      KILN_TRY(StmtPtr sum, loopNest(cx_.names, {height(), width()}, ForKind::Serial,
                                     [&](std::span<const ExprPtr> hw) -> Expected<StmtPtr> {
        std::vector<ExprPtr> at(hw.begin(), hw.end());
        return lanes([&](ExprPtr l) -> Expected<StmtPtr> {
          KILN_TRY(ExprPtr v, inputAt(image(batch, add(begin, l), at[0], at[1])));
          return storeBound(acc, l, add(load(acc, l), v), cx_.names);
        });
      }));
      KILN_TRY(StmtPtr done, lanes([&](ExprPtr l) -> Expected<StmtPtr> {
        return finish(meanOf(load(acc, l)), image(batch, add(begin, l), kir::index(0), kir::index(0)));
      }));
      return allocate(acc, seq({init, sum, done}));
    });
  }

  LowerContext &cx_;
  const PoolingSchedule &schedule_;
  const ir::Node &anchor_;
  const ir::Value *input_;
  const ir::Shape &inShape_;
  const ir::Shape &outShape_;
  DType dtype_;
  bool nhwc_;
  bool isMax_ = false, countPadding_ = false;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, padTop_ = 0, padLeft_ = 0;
  Type accType_;
};

} // namespace

Expected<StmtPtr> lowerPooling(LowerContext &cx, const PoolingSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a pooling group has an anchor");
  return PoolingLowering(cx, schedule).lower();
}

} // namespace kiln::lower
