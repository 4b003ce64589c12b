// parseSchedule is the exact inverse of scheduleStr: every schedule of the CPU
// and GPU spaces of every group kind reads back field for field, and malformed
// texts are errors naming the field.
#include "GroupRunner.h"

#include "ir/graph/Parser.h"
#include "passes/lower/Schedule.h"
#include "passes/lower/Lower.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

namespace kiln::test {
namespace {

/// Field-by-field equality of two schedules (scheduleStr equality would make
/// the round trip trivially true for a field the printer forgot).
bool sameGemm(const lower::MatMulSchedule &a, const lower::MatMulSchedule &b) {
  return a.mc == b.mc && a.nc == b.nc && a.kc == b.kc && a.mr == b.mr && a.nr == b.nr &&
         a.vectorWidth == b.vectorWidth && a.packA == b.packA && a.packB == b.packB &&
         a.parallel == b.parallel;
}
bool sameGpuGemm(const lower::GpuMatMulSchedule &a, const lower::GpuMatMulSchedule &b) {
  return a.blockM == b.blockM && a.blockN == b.blockN && a.blockK == b.blockK &&
         a.threadM == b.threadM && a.threadN == b.threadN && a.stages == b.stages &&
         a.vectorWidth == b.vectorWidth && a.splitK == b.splitK && a.warpM == b.warpM &&
         a.warpN == b.warpN;
}

struct SameSchedule {
  const lower::Schedule &other;
  template <typename T> bool operator()(const T &a) const {
    const T *b = std::get_if<T>(&other);
    return b && equal(a, *b);
  }
  static bool equal(const lower::NoSchedule &, const lower::NoSchedule &) { return true; }
  template <typename T>
    requires requires(T t) { t.minParallelWork; }
  static bool equal(const T &a, const T &b) {
    if constexpr (requires { a.tile; })
      return a.tile == b.tile && a.minParallelWork == b.minParallelWork;
    else
      return a.vectorWidth == b.vectorWidth && a.minParallelWork == b.minParallelWork;
  }
  static bool equal(const lower::MatMulSchedule &a, const lower::MatMulSchedule &b) {
    return sameGemm(a, b);
  }
  static bool equal(const lower::Conv2DSchedule &a, const lower::Conv2DSchedule &b) {
    return a.algorithm == b.algorithm && a.ocBlock == b.ocBlock && sameGemm(a.gemm, b.gemm);
  }
  static bool equal(const lower::GpuPointwiseSchedule &a, const lower::GpuPointwiseSchedule &b) {
    return a.threadsPerBlock == b.threadsPerBlock && a.vectorWidth == b.vectorWidth &&
           a.elementsPerThread == b.elementsPerThread && a.maxBlocksPerSm == b.maxBlocksPerSm;
  }
  static bool equal(const lower::GpuTransposeSchedule &a, const lower::GpuTransposeSchedule &b) {
    return a.tile == b.tile && a.rowsPerPass == b.rowsPerPass;
  }
  template <typename T>
    requires requires(T t) { t.rowsPerBlock; }
  static bool equal(const T &a, const T &b) {
    return a.threadsPerBlock == b.threadsPerBlock && a.rowsPerBlock == b.rowsPerBlock &&
           a.vectorWidth == b.vectorWidth;
  }
  static bool equal(const lower::GpuPoolingSchedule &a, const lower::GpuPoolingSchedule &b) {
    return a.threadsPerBlock == b.threadsPerBlock;
  }
  static bool equal(const lower::GpuMatMulSchedule &a, const lower::GpuMatMulSchedule &b) {
    return sameGpuGemm(a, b);
  }
  static bool equal(const lower::GpuConv2DSchedule &a, const lower::GpuConv2DSchedule &b) {
    return sameGpuGemm(a.gemm, b.gemm);
  }
};

void checkRoundTrip(const lower::Schedule &schedule) {
  std::string text = lower::scheduleStr(schedule);
  INFO(text);
  auto parsed = lower::parseSchedule(text);
  REQUIRE(parsed);
  CHECK(std::visit(SameSchedule{*parsed}, schedule));
  CHECK(lower::scheduleStr(*parsed) == text);
}

/// One group of every kind, CPU and GPU: matmul (f32 and f16, the tensor-core
/// space), conv2d nchw and nhwc, pointwise, transpose, reduction, row norm, pooling.
std::unique_ptr<ir::Graph> graphOfEveryKind() {
  auto graph = ir::parseGraph(R"(graph @kinds {
  input %a: f32[24,40]
  input %b: f32[40,16]
  input %ha: f16[64,64]
  input %hb: f16[64,64]
  input %x: f32[2,3,12,12]
  input %w: f32[8,3,3,3]
  input %xh: f32[2,12,12,3]
  input %wh: f32[8,3,3,3]
  input %y: f32[40,70]
  %0: f32[24,16] = matmul(%a, %b)
  %1: f16[64,64] = matmul(%ha, %hb)
  %2: f32[2,8,10,10] = conv2d(%x, %w)
  %3: f32[2,10,10,8] = conv2d(%xh, %wh) {layout = "nhwc"}
  %4: f32[40,70] = exp(%y)
  %5: f32[70,40] = transpose(%y) {perm = [1, 0]}
  %6: f32[40] = reduce_sum(%y) {axes = [1]}
  %7: f32[40,70] = softmax(%y) {axis = -1}
  %8: f32[2,3,6,6] = max_pool2d(%x) {kernel = [2, 2], stride = [2, 2]}
  output "o0" = %0
  output "o1" = %1
  output "o2" = %2
  output "o3" = %3
  output "o4" = %4
  output "o5" = %5
  output "o6" = %6
  output "o7" = %7
  output "o8" = %8
})");
  REQUIRE(graph);
  return std::move(*graph);
}

TEST_CASE("parseSchedule reads back every schedule of every CPU and GPU space",
          "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  auto gpu = codegen::gpuTargetNamed("sm_90a");
  REQUIRE(gpu);
  std::set<std::string> kinds;
  size_t checked = 0;
  for (const passes::FusionGroup &group : plan->groups) {
    std::vector<lower::Schedule> space = lower::scheduleSpace(*graph, group, testHostTarget());
    std::vector<lower::Schedule> gpuSpace = lower::scheduleSpace(*graph, group, *gpu);
    space.insert(space.end(), gpuSpace.begin(), gpuSpace.end());
    for (const lower::Schedule &schedule : space) {
      checkRoundTrip(schedule);
      std::string text = lower::scheduleStr(schedule);
      kinds.insert(text.substr(0, text.find(' ')) +
                   (text.find(" mma ") != std::string::npos      ? " mma"
                    : text.find(" direct ") != std::string::npos ? " direct"
                    : text.find(" im2col ") != std::string::npos ? " im2col"
                                                                  : ""));
      ++checked;
    }
  }
  // Every variant was among them.
  CHECK(kinds == std::set<std::string>{"matmul", "conv2d im2col", "conv2d direct", "pointwise",
                                       "transpose", "reduction", "rownorm", "pooling",
                                       "gpu.matmul", "gpu.matmul mma", "gpu.conv2d",
                                       "gpu.pointwise", "gpu.transpose", "gpu.reduction",
                                       "gpu.rownorm", "gpu.pooling"});
  CHECK(checked > 100);
}

TEST_CASE("parseSchedule keeps the fields a form usually leaves out", "[lower][schedule]") {
  checkRoundTrip(lower::NoSchedule{});
  lower::Conv2DSchedule im2col;
  im2col.ocBlock = 32; // not gemm.nr: printed
  checkRoundTrip(im2col);
  CHECK(lower::scheduleStr(im2col) ==
        "conv2d im2col mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner ocb=32");
  lower::Conv2DSchedule direct;
  direct.algorithm = lower::Conv2DSchedule::Algorithm::Direct;
  direct.gemm.packA = false;
  direct.gemm.parallel = lower::MatMulSchedule::Parallel::Outer;
  CHECK(lower::scheduleStr(direct) ==
        "conv2d direct ocb=16 mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=b par=outer");
  checkRoundTrip(direct);
  lower::GpuMatMulSchedule mma{.blockM = 128, .warpM = 32, .warpN = 16};
  checkRoundTrip(mma); // tensor cores with the default CUDA-core tile (4x4) printed
  CHECK(lower::scheduleStr(mma).find(" tm=4 tn=4") != std::string::npos);
  lower::GpuMatMulSchedule cudaCores{.warpN = 16}; // a stray warp width, kept
  checkRoundTrip(cudaCores);
  lower::MatMulSchedule serial;
  serial.parallel = lower::MatMulSchedule::Parallel::Serial;
  serial.packA = serial.packB = false;
  checkRoundTrip(serial);
}

TEST_CASE("parseSchedule rejects malformed text naming the field", "[lower][schedule]") {
  auto error = [](std::string_view text) {
    auto parsed = lower::parseSchedule(text);
    INFO(text);
    REQUIRE(!parsed);
    CHECK(parsed.error().code() == ErrorCode::ParseError);
    CHECK(parsed.error().message().find(std::string(text)) != std::string::npos);
    return parsed.error().message();
  };
  auto says = [&](std::string_view text, std::string_view expected) {
    std::string message = error(text);
    INFO(message);
    CHECK(message.find(expected) != std::string::npos);
  };
  says("", "single spaces");
  says("pointwise  vw=8 par=1", "single spaces");
  says("pointwise vw=8 par=1 ", "single spaces");
  says("blocked vw=8", "unknown schedule kind 'blocked'");
  says("pointwise vw=8", "field 'par' is missing");
  says("pointwise vw=8 par=1 tile=3", "unknown field 'tile'");
  says("pointwise vw=8 vw=4 par=1", "field 'vw' appears twice");
  says("pointwise vw=eight par=1", "field 'vw' = 'eight' is not an integer");
  says("pointwise vw=8x par=1", "is not an integer");
  says("pointwise vw=0 par=1", "field 'vw' = 0 must be at least 1");
  says("pointwise vw=8 par=-1", "must be at least 0");
  says("pointwise vw= par=1", "is not a field=value pair");
  says("pointwise extra vw=8 par=1", "is not a field=value pair");
  says("matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ba par=inner", "'pack' = 'ba'");
  says("matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=wide", "'par' = 'wide'");
  says("matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab", "field 'par' is missing");
  says("conv2d mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner", "'im2col' or 'direct'");
  says("conv2d winograd mc=1", "found 'winograd'");
  says("conv2d direct mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner",
       "field 'ocb' is missing");
  says("gpu.matmul mma bm=64 bn=64 bk=16 stages=2 vw=4 splitk=1", "field 'wm' is missing");
  says("gpu.matmul bm=64 bn=64 bk=16 tm=4 tn=4 stages=2 vw=4 splitk=1 wm=16 wn=16",
       "needs the mma form");
  says("gpu.matmul tiled bm=64", "found 'tiled'");
  says("gpu.pooling threads=99999999999", "is not an integer");
}

} // namespace
} // namespace kiln::test
