// Pooling groups: max_pool2d and avg_pool2d (padding, stride,
// count_include_pad), global_avg_pool, and depthwise conv2d (a pool whose
// window terms are weighted by the channel's filter tap; dilation), in nchw
// and nhwc. The window op (its window, accumulator, element reads and result)
// is shared; the targets differ in how output elements bind. CPU: nchw tasks
// own one output row (n, c, oh) and vectorize over ow; nhwc pools own one
// output pixel (n, oh, ow) and a block of channels, vectorized over c; nhwc
// depthwise convolutions own an output row and a block of channels, so the
// block's weights are staged once per row, and rows inside the image sum each
// window in registers; window bounds are folded into loop ranges and If
// conditions, so no load is predicated. GPU: a thread per
// output element in either layout (neighbouring threads on neighbouring
// output elements, so nhwc reads are coalesced over channels and nchw over
// output columns), the window walked serially with its bounds as If
// conditions; global_avg_pool a thread per (n, c).
#include "passes/lower/LowerKinds.h"
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

/// A depthwise row task's accumulators (output pixels x channels): 16 KiB of f32, so they and
/// the input rows they read stay in L1.
constexpr int64_t kRowAccumulators = 4096;

/// What a pooling anchor computes, decoded from its op and attributes, and
/// the pieces of its kernel that do not depend on the target.
class PoolingOp {
public:
  explicit PoolingOp(KernelContext &cx)
      : kernel_(cx), anchor_(*cx.group.anchor), input_(anchor_.operand(0)),
        inShape_(input_->type().shape), outShape_(anchor_.type().shape),
        dtype_(input_->type().dtype), nhwc_(ir::getString(anchor_.attrs(), "layout") == "nhwc"),
        global_(anchor_.kind() == OpKind::GlobalAvgPool),
        depthwise_(anchor_.kind() == OpKind::Conv2D) {
    KILN_CHECK(!depthwise_ || passes::isDepthwiseConv2D(anchor_),
               "a conv2d anchors a pooling group only when it is depthwise");
    if (global_) {
      accType_ = sumType(dtype_);
      return;
    }
    const auto &stride = ir::getInts(anchor_.attrs(), "stride");
    const auto &padding = ir::getInts(anchor_.attrs(), "padding");
    sh_ = stride[0], sw_ = stride[1];
    padTop_ = padding[0], padLeft_ = padding[2];
    if (depthwise_) {
      // The filter is [C, 1, KH, KW] (nchw) or [C, KH, KW, 1] (nhwc).
      const ir::Shape &filter = anchor_.operand(1)->type().shape;
      kh_ = filter[nhwc_ ? 1 : 2], kw_ = filter[nhwc_ ? 2 : 3];
      const auto &dilation = ir::getInts(anchor_.attrs(), "dilation");
      dh_ = dilation[0], dw_ = dilation[1];
      accType_ = Type::scalar(ir::getType(anchor_.attrs(), "accumulate"));
      return;
    }
    isMax_ = anchor_.kind() == OpKind::MaxPool2D;
    const auto &kernel = ir::getInts(anchor_.attrs(), "kernel");
    kh_ = kernel[0], kw_ = kernel[1];
    countPadding_ = !isMax_ && ir::getBool(anchor_.attrs(), "count_include_pad");
    accType_ = isMax_ ? computeType(dtype_) : sumType(dtype_);
  }

protected:
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
    KILN_TRY(ExprPtr value, kernel_.emitter.at(input_, index));
    return cast(toCompute(value), accType_);
  }

  /// A depthwise convolution's filter tap (kh, kw) of channel c.
  Expected<ExprPtr> filterAt(ExprPtr c, ExprPtr kh, ExprPtr kw) {
    std::vector<ExprPtr> index = nhwc_ ? std::vector<ExprPtr>{c, kh, kw, kir::index(0)}
                                       : std::vector<ExprPtr>{c, kir::index(0), kh, kw};
    KILN_TRY(ExprPtr value, kernel_.emitter.at(anchor_.operand(1), index));
    return cast(toCompute(value), accType_);
  }

  /// What window tap (kh, kw) of channel c adds at input position (ih, iw): the input
  /// element, times the tap's weight for a depthwise convolution.
  Expected<ExprPtr> term(ExprPtr n, ExprPtr c, ExprPtr ih, ExprPtr iw, ExprPtr kh, ExprPtr kw) {
    KILN_TRY(ExprPtr value, inputAt(image(n, c, ih, iw)));
    if (!depthwise_)
      return value;
    KILN_TRY(ExprPtr weight, filterAt(c, kh, kw));
    return mul(value, weight);
  }

  /// The input row or column that window tap `k` reads for the window starting at `first`.
  static ExprPtr tapPosition(const ExprPtr &first, const ExprPtr &k, int64_t dilation) {
    return add(first, mul(k, kir::index(dilation)));
  }

  /// The output columns [first, last) whose window tap kw reads a column inside the image:
  /// 0 <= o * sw - padLeft + kw * dw < width.
  std::pair<ExprPtr, ExprPtr> columnsInside(const ExprPtr &kw) const {
    ExprPtr offset = mul(kw, kir::index(dw_));
    ExprPtr lowNumerator = max(sub(kir::index(padLeft_), offset), kir::index(0));
    ExprPtr first = div(add(lowNumerator, kir::index(sw_ - 1)), kir::index(sw_));
    ExprPtr highNumerator = max(sub(kir::index(width() + padLeft_), offset), kir::index(0));
    ExprPtr last = div(add(highNumerator, kir::index(sw_ - 1)), kir::index(sw_));
    return {first, last};
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
    if (isMax_ || depthwise_)
      return cast(acc, Type::scalar(out));
    ExprPtr count = countPadding_ ? kir::index(kh_ * kw_)
                                  : mul(covered(firstH, kh_, height()), covered(firstW, kw_, width()));
    return cast(div(acc, cast(count, accType_)), Type::scalar(out));
  }

  /// global_avg_pool's value from the sum of a plane.
  ExprPtr meanOf(const ExprPtr &sum) const {
    Type f64 = Type::scalar(DType::F64);
    return cast(div(sum, constant(static_cast<double>(height() * width()), f64)),
                Type::scalar(anchor_.type().dtype));
  }

  /// Stores the root at `outIndex` with the anchor's value there being `value`.
  Expected<StmtPtr> finish(ExprPtr value, std::vector<ExprPtr> outIndex) {
    kernel_.emitter.overrideValue(anchor_.result(), [value](std::span<const ExprPtr>) { return value; });
    return kernel_.storeRoot(outIndex);
  }

  KernelContext &kernel_;
  const ir::Node &anchor_;
  const ir::Value *input_;
  const ir::Shape &inShape_;
  const ir::Shape &outShape_;
  DType dtype_;
  bool nhwc_, global_, depthwise_;
  bool isMax_ = false, countPadding_ = false;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, padTop_ = 0, padLeft_ = 0;
  Type accType_;
};

// ---- the CPU binding

class PoolingLowering : PoolingOp {
public:
  PoolingLowering(LowerContext &cx, const PoolingSchedule &schedule)
      : PoolingOp(cx), cx_(cx), schedule_(schedule) {}

  Expected<StmtPtr> lower() {
    if (product(outShape_) == 0)
      return seq({});
    if (global_)
      return nhwc_ ? globalNhwc() : globalNchw();
    if (nhwc_)
      return depthwise_ ? depthwiseNhwc() : windowNhwc();
    return windowNchw();
  }

private:
  /// The tasks over `perBlock` (a count over the images, at the largest batch) times `blocks`,
  /// for the run's batch.
  ExprPtr imageTasks(int64_t perBlock, int64_t blocks) {
    return mul(cx_.sizes.withLeadingAxis(cx_.group.anchor->operand(0), perBlock),
               kir::index(blocks));
  }

  /// nchw: a task per output row (n, c, oh) and block of ow; for each window
  /// row in the image and each window column, a vectorized loop over the
  /// output columns whose input column is in the image.
  Expected<StmtPtr> windowNchw() {
    int64_t ow = outWidth(), blockWidth = std::min<int64_t>(ow, 2048);
    int64_t blocks = ceilDiv(ow, blockWidth);
    std::vector<int64_t> rowExtents{n(), channels(), outHeight()};
    bool parallel = runsInParallel(product(outShape_) * kh_ * kw_, schedule_.minParallelWork);
    return taskLoop(cx_.names, imageTasks(product(rowExtents), blocks), parallel,
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
        ExprPtr ih = tapPosition(firstH, kh, dh_);
        ExprPtr inside = logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height())));
        KILN_TRY(StmtPtr body, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
          auto [first, last] = columnsInside(kw);
          return columns(max(first, begin), min(last, end), [&](ExprPtr o) -> Expected<StmtPtr> {
            ExprPtr iw = tapPosition(sub(mul(o, kir::index(sw_)), kir::index(padLeft_)), kw, dw_);
            KILN_TRY(ExprPtr v, term(r[0], r[1], ih, iw, kh, kw));
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

  /// One nhwc depthwise task: output row (n, oh) = (r[0], r[1]) and channels [begin, begin +
  /// extent) of a block of at most `blockWidth`; `firstH` is the window's first input row.
  struct DepthwiseRow {
    std::vector<ExprPtr> r;
    ExprPtr begin, extent, firstH;
    int64_t blockWidth;
  };

  /// nhwc depthwise conv2d: a task per output row (n, oh) and block of channels. A filter is
  /// [C, KH, KW, 1], so neighbouring channels' weights for one tap are KH*KW apart: a task
  /// stages the block's weights in a Local buffer once, then reads them contiguously with the
  /// input, vectorized over the block's channels. Rows whose taps all lie inside the image sum
  /// each window in registers (depthwiseRowInside); the rows at the top and bottom edges
  /// accumulate tap by tap (depthwiseRowWithBounds).
  Expected<StmtPtr> depthwiseNhwc() {
    int64_t c = channels(), ow = outWidth();
    int64_t unit = std::max<int64_t>(1, schedule_.vectorWidth);
    int64_t fit = std::max<int64_t>(unit, kRowAccumulators / ow / unit * unit);
    int64_t blockWidth = std::min(c, fit);
    int64_t blocks = ceilDiv(c, blockWidth);
    std::vector<int64_t> rowExtents{n(), outHeight()};
    bool parallel = runsInParallel(product(outShape_) * kh_ * kw_, schedule_.minParallelWork);
    return taskLoop(cx_.names, imageTasks(product(rowExtents), blocks), parallel,
                    [&](ExprPtr task) -> Expected<StmtPtr> {
      ExprPtr row = blocks == 1 ? task : div(task, kir::index(blocks));
      DepthwiseRow dr;
      dr.r = delinearize(row, rowExtents);
      dr.begin = blocks == 1 ? kir::index(0) : mul(mod(task, kir::index(blocks)), kir::index(blockWidth));
      dr.extent = blocks == 1 ? kir::index(c) : min(kir::index(blockWidth), sub(kir::index(c), dr.begin));
      dr.firstH = sub(mul(dr.r[1], kir::index(sh_)), kir::index(padTop_));
      dr.blockWidth = blockWidth;
      KILN_TRY(StmtPtr edge, depthwiseRowWithBounds(dr));
      KILN_TRY(std::optional<StmtPtr> inside, depthwiseRowInside(dr));
      if (!inside)
        return edge;
      ExprPtr lastRow = tapPosition(dr.firstH, kir::index(kh_ - 1), dh_);
      ExprPtr rowInside = logicalAnd(ge(dr.firstH, kir::index(0)), lt(lastRow, kir::index(height())));
      return ifThen(rowInside, *inside, edge);
    });
  }

  /// The block's channels as a vectorized loop.
  Expected<StmtPtr> blockLanes(const DepthwiseRow &dr, const BodyFn &body) {
    return loop(cx_.names, "c", kir::index(0), dr.extent, ForKind::Vectorized, body);
  }

  /// A row whose every tap row is inside the image: the block's KH*KW weights are staged, then
  /// each output pixel's window is one sum of products per channel, kept in registers and
  /// stored through the epilogue. The columns whose window leaves the image, a few at each end
  /// and known while lowering, sum only their taps inside it; with more than 8 of them (a
  /// window as wide as the image) there is no such row (nullopt).
  Expected<std::optional<StmtPtr>> depthwiseRowInside(const DepthwiseRow &dr) {
    int64_t ow = outWidth();
    // Columns [first, end) have every tap inside: o * sw - padLeft >= 0 and
    // o * sw - padLeft + (KW - 1) * dw <= width - 1.
    int64_t first = std::min(ceilDiv(padLeft_, sw_), ow);
    int64_t lastNumerator = width() - 1 + padLeft_ - (kw_ - 1) * dw_;
    int64_t end = lastNumerator < 0 ? first : std::clamp(lastNumerator / sw_ + 1, first, ow);
    if (first + (ow - end) > 8)
      return std::optional<StmtPtr>();
    BufferPtr weights = makeBuffer(cx_.names.name("taps"), accType_.dtype, kh_ * kw_ * dr.blockWidth,
                                   MemScope::Local);
    auto weightAt = [&](int64_t kh, int64_t kw, const ExprPtr &l) {
      return add(kir::index((kh * kw_ + kw) * dr.blockWidth), l);
    };
    std::vector<StmtPtr> body;
    for (int64_t kh = 0; kh < kh_; ++kh)
      for (int64_t kw = 0; kw < kw_; ++kw) {
        KILN_TRY(StmtPtr stage, blockLanes(dr, [&](ExprPtr l) -> Expected<StmtPtr> {
          KILN_TRY(ExprPtr weight, filterAt(add(dr.begin, l), kir::index(kh), kir::index(kw)));
          return storeBound(weights, weightAt(kh, kw, l), weight, cx_.names);
        }));
        body.push_back(stage);
      }
    // Output column o; `column` is its value when known while lowering (an edge column).
    auto pixel = [&](ExprPtr o, std::optional<int64_t> column) {
      ExprPtr firstW = sub(mul(o, kir::index(sw_)), kir::index(padLeft_));
      return blockLanes(dr, [&](ExprPtr l) -> Expected<StmtPtr> {
        ExprPtr sum = nullptr;
        for (int64_t kh = 0; kh < kh_; ++kh)
          for (int64_t kw = 0; kw < kw_; ++kw) {
            int64_t offset = kw * dw_;
            if (column && (*column * sw_ - padLeft_ + offset < 0 ||
                           *column * sw_ - padLeft_ + offset >= width()))
              continue;
            ExprPtr ih = tapPosition(dr.firstH, kir::index(kh), dh_);
            KILN_TRY(ExprPtr v, inputAt(image(dr.r[0], add(dr.begin, l), ih, add(firstW, kir::index(offset)))));
            ExprPtr term = mul(v, load(weights, weightAt(kh, kw, l)));
            sum = sum ? add(sum, term) : term;
          }
        ExprPtr value = windowResult(sum ? sum : initValue(), dr.firstH, firstW);
        return finish(value, image(dr.r[0], add(dr.begin, l), dr.r[1], o));
      });
    };
    for (int64_t o = 0; o < first; ++o) {
      KILN_TRY(StmtPtr edge, pixel(kir::index(o), o));
      body.push_back(edge);
    }
    KILN_TRY(StmtPtr interior, loop(cx_.names, "w", kir::index(first), kir::index(end - first),
                                    ForKind::Serial, [&](ExprPtr o) { return pixel(o, std::nullopt); }));
    body.push_back(interior);
    for (int64_t o = end; o < ow; ++o) {
      KILN_TRY(StmtPtr edge, pixel(kir::index(o), o));
      body.push_back(edge);
    }
    return std::optional<StmtPtr>(allocate(weights, seq(std::move(body))));
  }

  /// Any row: the row's accumulators (pixels x the block's channels, at most kRowAccumulators)
  /// stay in a Local buffer; for each tap whose input row is inside, the block's weights for
  /// the tap are staged in a Local vector, then every output pixel whose input column is
  /// inside adds its term.
  Expected<StmtPtr> depthwiseRowWithBounds(const DepthwiseRow &dr) {
    int64_t ow = outWidth();
    BufferPtr acc = makeBuffer(cx_.names.name("acc"), accType_.dtype, ow * dr.blockWidth, MemScope::Local);
    BufferPtr weights = makeBuffer(cx_.names.name("tap"), accType_.dtype, dr.blockWidth, MemScope::Local);
    auto lanes = [&](const BodyFn &body) { return blockLanes(dr, body); };
    auto slot = [&](const ExprPtr &o, const ExprPtr &l) { return add(mul(o, kir::index(dr.blockWidth)), l); };
    KILN_TRY(StmtPtr init, loop(cx_.names, "w", ow, ForKind::Serial, [&](ExprPtr o) -> Expected<StmtPtr> {
      return lanes([&](ExprPtr l) -> Expected<StmtPtr> { return store(acc, slot(o, l), initValue()); });
    }));
    KILN_TRY(StmtPtr window, loop(cx_.names, "kh", kh_, ForKind::Serial, [&](ExprPtr kh) -> Expected<StmtPtr> {
      ExprPtr ih = tapPosition(dr.firstH, kh, dh_);
      KILN_TRY(StmtPtr body, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
        KILN_TRY(StmtPtr stage, lanes([&](ExprPtr l) -> Expected<StmtPtr> {
          KILN_TRY(ExprPtr weight, filterAt(add(dr.begin, l), kh, kw));
          return storeBound(weights, l, weight, cx_.names);
        }));
        auto [first, last] = columnsInside(kw);
        ExprPtr end = min(last, kir::index(ow));
        KILN_TRY(StmtPtr update, loop(cx_.names, "w", first, max(sub(end, first), kir::index(0)),
                                      ForKind::Serial, [&](ExprPtr o) -> Expected<StmtPtr> {
          ExprPtr iw = tapPosition(sub(mul(o, kir::index(sw_)), kir::index(padLeft_)), kw, dw_);
          return lanes([&](ExprPtr l) -> Expected<StmtPtr> {
            KILN_TRY(ExprPtr v, inputAt(image(dr.r[0], add(dr.begin, l), ih, iw)));
            ExprPtr at = slot(o, l);
            return storeBound(acc, at, add(load(acc, at), mul(v, load(weights, l))), cx_.names);
          });
        }));
        return seq({stage, update});
      }));
      return ifThen(logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height()))), body);
    }));
    KILN_TRY(StmtPtr done, loop(cx_.names, "w", ow, ForKind::Serial, [&](ExprPtr o) -> Expected<StmtPtr> {
      ExprPtr firstW = sub(mul(o, kir::index(sw_)), kir::index(padLeft_));
      return lanes([&](ExprPtr l) -> Expected<StmtPtr> {
        ExprPtr value = windowResult(load(acc, slot(o, l)), dr.firstH, firstW);
        return finish(value, image(dr.r[0], add(dr.begin, l), dr.r[1], o));
      });
    }));
    return allocate(acc, allocate(weights, seq({init, window, done})));
  }

  /// nhwc: a task per output pixel (n, oh, ow) and block of channels; the
  /// window's bounds are uniform over the block, so they are If conditions.
  Expected<StmtPtr> windowNhwc() {
    int64_t c = channels(), blockWidth = std::min<int64_t>(c, 1024);
    int64_t blocks = ceilDiv(c, blockWidth);
    std::vector<int64_t> pixelExtents{n(), outHeight(), outWidth()};
    bool parallel = runsInParallel(product(outShape_) * kh_ * kw_, schedule_.minParallelWork);
    return taskLoop(cx_.names, imageTasks(product(pixelExtents), blocks), parallel,
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

  /// global_avg_pool, nchw: one task per (n, c), summing its contiguous plane.
  Expected<StmtPtr> globalNchw() {
    std::vector<int64_t> extents{n(), channels()};
    bool parallel = runsInParallel(product(inShape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, imageTasks(product(extents), 1), parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
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
    int64_t c = channels(), blockWidth = std::min<int64_t>(c, 1024);
    int64_t blocks = ceilDiv(c, blockWidth);
    bool parallel = runsInParallel(product(inShape_), schedule_.minParallelWork);
    return taskLoop(cx_.names, imageTasks(n(), blocks), parallel, [&](ExprPtr task) -> Expected<StmtPtr> {
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
};

// ---- the GPU binding

class GpuPoolingLowering : PoolingOp {
public:
  GpuPoolingLowering(GpuLowerContext &cx, const GpuPoolingSchedule &schedule)
      : PoolingOp(cx), cx_(cx), schedule_(schedule) {}

  Expected<StmtPtr> lower() {
    int64_t outputs = product(outShape_);
    if (outputs == 0)
      return gpuNest(cx_, 1, 1, 1, [](const GpuThread &) -> Expected<StmtPtr> { return seq({}); });
    int64_t threads = std::min<int64_t>(schedule_.threadsPerBlock, ceilDiv(outputs, 32) * 32);
    int64_t blocks = ceilDiv(outputs, threads);
    return gpuNest(cx_, blocks, threads, 1, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr flat = add(mul(t.block, kir::index(threads)), t.x);
      std::vector<ExprPtr> o = delinearize(flat, outShape_);
      // Logical (n, c, oh, ow) of the output element.
      ExprPtr n = o[0], c = o[nhwc_ ? 3 : 1], oh = o[nhwc_ ? 1 : 2], ow = o[nhwc_ ? 2 : 3];
      KILN_TRY(StmtPtr body, global_ ? globalPool(n, c) : window(n, c, oh, ow));
      // A symbolic batch: the grid covers the largest, the run's images are computed.
      ExprPtr runOutputs = cx_.sizes.withLeadingAxis(anchor_.result(), outputs);
      bool exact = blocks * threads == outputs && as<IntImm>(*runOutputs) != nullptr;
      return exact ? body : ifThen(lt(flat, runOutputs), body);
    });
  }

private:
  Expected<StmtPtr> window(ExprPtr n, ExprPtr c, ExprPtr oh, ExprPtr ow) {
    RegisterState acc = registerState(cx_.names, "acc", {accType_});
    ExprPtr init = initValue();
    return letsBound("p", {sub(mul(oh, kir::index(sh_)), kir::index(padTop_)),
                           sub(mul(ow, kir::index(sw_)), kir::index(padLeft_))},
                     cx_.names, [&](State first) -> Expected<StmtPtr> {
      KILN_TRY(StmtPtr walk, loop(cx_.names, "kh", kh_, ForKind::Serial, [&](ExprPtr kh) -> Expected<StmtPtr> {
        ExprPtr ih = tapPosition(first[0], kh, dh_);
        KILN_TRY(StmtPtr row, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
          ExprPtr iw = tapPosition(first[1], kw, dw_);
          KILN_TRY(ExprPtr v, term(n, c, ih, iw, kh, kw));
          ExprPtr a = acc.load()[0];
          StmtPtr update = acc.store({fold(a, v)}, cx_.names);
          return ifThen(logicalAnd(ge(iw, kir::index(0)), lt(iw, kir::index(width()))), update);
        }));
        return ifThen(logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height()))), row);
      }));
      ExprPtr value = windowResult(acc.load()[0], first[0], first[1]);
      KILN_TRY(StmtPtr done, letsBound("r", {value}, cx_.names, [&](State result) {
        return finish(result[0], image(n, c, oh, ow));
      }));
      return acc.allocateAround(seq({acc.store({init}, cx_.names), walk, done}));
    });
  }

  Expected<StmtPtr> globalPool(ExprPtr n, ExprPtr c) {
    RegisterState acc = registerState(cx_.names, "acc", {accType_});
    KILN_TRY(StmtPtr sum, loopNest(cx_.names, {height(), width()}, ForKind::Serial,
                                   [&](std::span<const ExprPtr> hw) -> Expected<StmtPtr> {
      KILN_TRY(ExprPtr v, inputAt(image(n, c, hw[0], hw[1])));
      return acc.store({add(acc.load()[0], v)}, cx_.names);
    }));
    ExprPtr mean = meanOf(acc.load()[0]);
    KILN_TRY(StmtPtr done, letsBound("r", {mean}, cx_.names, [&](State result) {
      return finish(result[0], image(n, c, kir::index(0), kir::index(0)));
    }));
    return acc.allocateAround(seq({acc.store({constant(0.0, accType_)}, cx_.names), sum, done}));
  }

  GpuLowerContext &cx_;
  const GpuPoolingSchedule &schedule_;
};

} // namespace

Expected<StmtPtr> lowerPooling(LowerContext &cx, const PoolingSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a pooling group has an anchor");
  return PoolingLowering(cx, schedule).lower();
}

Expected<StmtPtr> lowerGpuPooling(GpuLowerContext &cx, const GpuPoolingSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a pooling group has an anchor");
  return GpuPoolingLowering(cx, schedule).lower();
}

} // namespace kiln::lower
