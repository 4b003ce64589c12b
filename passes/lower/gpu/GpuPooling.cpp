// Pooling groups on the GPU: a thread per output element in either layout
// (neighbouring threads on neighbouring output elements, so nhwc reads are
// coalesced over channels and nchw over output columns), the window walked
// serially with its bounds as If conditions; global_avg_pool a thread per (n, c).
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;
using ir::OpKind;

namespace {

class GpuPoolingLowering {
public:
  GpuPoolingLowering(GpuLowerContext &cx, const GpuPoolingSchedule &schedule)
      : cx_(cx), schedule_(schedule), anchor_(*cx.group.anchor), input_(anchor_.operand(0)),
        inShape_(input_->type().shape), outShape_(anchor_.type().shape),
        dtype_(input_->type().dtype), nhwc_(ir::getString(anchor_.attrs(), "layout") == "nhwc") {}

  Expected<StmtPtr> lower() {
    int64_t outputs = product(outShape_);
    if (outputs == 0)
      return gpuNest(cx_, 1, 1, 1, [](const GpuThread &) -> Expected<StmtPtr> { return seq({}); });
    bool global = anchor_.kind() == OpKind::GlobalAvgPool;
    if (!global) {
      isMax_ = anchor_.kind() == OpKind::MaxPool2D;
      const auto &kernel = ir::getInts(anchor_.attrs(), "kernel");
      const auto &stride = ir::getInts(anchor_.attrs(), "stride");
      const auto &padding = ir::getInts(anchor_.attrs(), "padding");
      kh_ = kernel[0], kw_ = kernel[1], sh_ = stride[0], sw_ = stride[1];
      padTop_ = padding[0], padLeft_ = padding[2];
      countPadding_ = !isMax_ && ir::getBool(anchor_.attrs(), "count_include_pad");
    }
    accType_ = isMax_ ? computeType(dtype_) : sumType(dtype_);
    int64_t threads = std::min<int64_t>(schedule_.threadsPerBlock, ceilDiv(outputs, 32) * 32);
    int64_t blocks = ceilDiv(outputs, threads);
    return gpuNest(cx_, blocks, threads, 1, [&](const GpuThread &t) -> Expected<StmtPtr> {
      ExprPtr flat = add(mul(t.block, kir::index(threads)), t.x);
      std::vector<ExprPtr> o = delinearize(flat, outShape_);
      // Logical (n, c, oh, ow) of the output element.
      ExprPtr n = o[0], c = o[nhwc_ ? 3 : 1], oh = o[nhwc_ ? 1 : 2], ow = o[nhwc_ ? 2 : 3];
      KILN_TRY(StmtPtr body, global ? globalPool(n, c) : window(n, c, oh, ow));
      return blocks * threads == outputs ? body : ifThen(lt(flat, kir::index(outputs)), body);
    });
  }

private:
  int64_t height() const { return inShape_[nhwc_ ? 1 : 2]; }
  int64_t width() const { return inShape_[nhwc_ ? 2 : 3]; }

  std::vector<ExprPtr> image(ExprPtr n, ExprPtr c, ExprPtr h, ExprPtr w) const {
    if (nhwc_)
      return {n, h, w, c};
    return {n, c, h, w};
  }

  Expected<ExprPtr> inputAt(std::vector<ExprPtr> index) {
    KILN_TRY(ExprPtr value, cx_.emitter.at(input_, index));
    return cast(toCompute(value), accType_);
  }

  Expected<StmtPtr> finish(ExprPtr value, std::vector<ExprPtr> outIndex) {
    cx_.emitter.overrideValue(anchor_.result(), [value](std::span<const ExprPtr>) { return value; });
    return cx_.storeRoot(outIndex);
  }

  static ExprPtr covered(const ExprPtr &first, int64_t kernel, int64_t size) {
    ExprPtr low = max(first, kir::index(0));
    ExprPtr high = min(add(first, kir::index(kernel)), kir::index(size));
    return sub(high, low);
  }

  Expected<StmtPtr> window(ExprPtr n, ExprPtr c, ExprPtr oh, ExprPtr ow) {
    RegisterState acc = registerState(cx_.names, "acc", {accType_});
    ExprPtr init = isMax_ ? extremumInit(accType_, true) : constant(0.0, accType_);
    return letsBound("p", {sub(mul(oh, kir::index(sh_)), kir::index(padTop_)),
                           sub(mul(ow, kir::index(sw_)), kir::index(padLeft_))},
                     cx_.names, [&](State first) -> Expected<StmtPtr> {
      KILN_TRY(StmtPtr walk, loop(cx_.names, "kh", kh_, ForKind::Serial, [&](ExprPtr kh) -> Expected<StmtPtr> {
        ExprPtr ih = add(first[0], kh);
        KILN_TRY(StmtPtr row, loop(cx_.names, "kw", kw_, ForKind::Serial, [&](ExprPtr kw) -> Expected<StmtPtr> {
          ExprPtr iw = add(first[1], kw);
          KILN_TRY(ExprPtr v, inputAt(image(n, c, ih, iw)));
          ExprPtr a = acc.load()[0];
          StmtPtr update = acc.store({isMax_ ? foldExtremum(a, v, true) : add(a, v)}, cx_.names);
          return ifThen(logicalAnd(ge(iw, kir::index(0)), lt(iw, kir::index(width()))), update);
        }));
        return ifThen(logicalAnd(ge(ih, kir::index(0)), lt(ih, kir::index(height()))), row);
      }));
      DType out = anchor_.type().dtype;
      ExprPtr total = acc.load()[0];
      ExprPtr value;
      if (isMax_) {
        value = cast(total, Type::scalar(out));
      } else {
        ExprPtr count = countPadding_ ? kir::index(kh_ * kw_)
                                      : mul(covered(first[0], kh_, height()), covered(first[1], kw_, width()));
        value = cast(div(total, cast(count, accType_)), Type::scalar(out));
      }
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
    Type f64 = Type::scalar(DType::F64);
    ExprPtr mean = cast(div(acc.load()[0], constant(static_cast<double>(height() * width()), f64)),
                        Type::scalar(anchor_.type().dtype));
    KILN_TRY(StmtPtr done, letsBound("r", {mean}, cx_.names, [&](State result) {
      return finish(result[0], image(n, c, kir::index(0), kir::index(0)));
    }));
    return acc.allocateAround(seq({acc.store({constant(0.0, accType_)}, cx_.names), sum, done}));
  }

  GpuLowerContext &cx_;
  const GpuPoolingSchedule &schedule_;
  const ir::Node &anchor_;
  const ir::Value *input_;
  const ir::Shape &inShape_;
  const ir::Shape &outShape_;
  DType dtype_;
  bool nhwc_;
  bool isMax_ = false, countPadding_ = false;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, padTop_ = 0, padLeft_ = 0;
  kir::Type accType_;
};

} // namespace

Expected<StmtPtr> lowerGpuPooling(GpuLowerContext &cx, const GpuPoolingSchedule &schedule) {
  KILN_CHECK(cx.group.anchor != nullptr, "a pooling group has an anchor");
  return GpuPoolingLowering(cx, schedule).lower();
}

} // namespace kiln::lower
