// Section (f): kiln's conv2d (implicit GEMMs: fp32 NCHW on the CUDA cores, bf16 NHWC on the
// tensor cores, by default and with warpgroup products forced) against cuDNN's fastest
// algorithm on ResNet and VGG16 layer shapes.
#include "bench/FusedSchedules.h"
#include "bench/gpu/DeviceTimer.h"
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"
#include "frontend/Ops.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cudnn/CudnnConv2D.h"
#include "runtime/cudnn/CudnnLibrary.h"
#include "support/FloatConvert.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <sstream>

namespace kiln::bench {

namespace {

constexpr double kGoal = 0.90;
/// Output elements checked against fp64 sums, on each side.
constexpr int kSamples = 256;
/// fp32 accumulation of K <= 4608 products (512 channels x 3x3) in any order: the share of
/// the sampled bound that scales with sum |x w|. The worst case is (K-1) * 2^-24 (2.7e-4);
/// random signs stay far below 2e-5, while one lost filter tap of 64 channels (about
/// sqrt(64/9) = 2.7 on these inputs) is several times the whole bound.
constexpr double kAccumulation = 2e-5;
/// Find's workspace for trying cuDNN's algorithms: those that need more are not tried.
constexpr int64_t kMaxFindWorkspace = int64_t{1} << 30;

/// One way of running conv2d: the dtype, the layout and the engines on each side.
struct Precision {
  std::string_view name; ///< "f32", "bf16"
  DType dtype;           ///< of x, w and y
  Layout layout;
  /// Storing the fp32 accumulator in `dtype`: half an ulp, relative.
  double resultRounding;
  /// cuDNN's sampled check, when its algorithm is FFT or Winograd: their transforms round
  /// the operands (and, for bf16 data, may keep them in bf16), so add this * sum |x w|.
  double cudnnTransformSlack;
  /// The largest max |kiln - cuDNN| / max |y| accepted when both sides are GEMMs: for f32
  /// the two summation orders (as section (c) against SGEMM), for bf16 one ulp of the
  /// result relative to it, with margin (2^-7).
  double agreement;
  /// The same when cuDNN's algorithm transforms the operands.
  double transformAgreement;
  std::string_view kilnEngine, cudnnMath, layoutName;
  /// Forces kiln's warpgroup (wgmma) template, sm_90a only, instead of the default schedule
  /// (mma.sync until the wgmma path is measured): no goal, the rows beside the default's.
  bool wgmma = false;
};

constexpr Precision kPrecisions[] = {
    {"f32", DType::F32, Layout::NCHW, 0x1p-24, 2e-4, 1e-4, 1e-3,
     "CUDA-core implicit GEMM, no tf32", "CUDNN_FMA_MATH", "NCHW"},
    {"bf16", DType::BF16, Layout::NHWC, 0x1p-8, 0x1p-8, 1e-2, 3e-2,
     "tensor-core implicit GEMM (mma.sync), fp32 accumulation", "CUDNN_TENSOR_OP_MATH", "NHWC"},
    {"bf16_wgmma", DType::BF16, Layout::NHWC, 0x1p-8, 0x1p-8, 1e-2, 3e-2,
     "tensor-core implicit GEMM (wgmma, operands by cp.async, forced), fp32 accumulation",
     "CUDNN_TENSOR_OP_MATH", "NHWC", true},
};

/// A square conv2d layer, stride 1, "same" padding (kernel / 2).
struct Layer {
  std::string_view id;    ///< in the workload's name, for --filter: "resnet_56_3x3"
  std::string_view label; ///< in the table
  int64_t images, channels, size, filters, kernel;

  int64_t padding() const { return kernel / 2; }
  double flops() const {
    return 2.0 * double(images) * double(filters) * double(size * size) *
           double(channels * kernel * kernel);
  }
  std::vector<int64_t> xShape(Layout layout) const {
    return layout == Layout::NHWC ? std::vector<int64_t>{images, size, size, channels}
                                  : std::vector<int64_t>{images, channels, size, size};
  }
  std::vector<int64_t> wShape(Layout layout) const {
    return layout == Layout::NHWC ? std::vector<int64_t>{filters, kernel, kernel, channels}
                                  : std::vector<int64_t>{filters, channels, kernel, kernel};
  }
  std::vector<int64_t> yShape(Layout layout) const {
    return layout == Layout::NHWC ? std::vector<int64_t>{images, size, size, filters}
                                  : std::vector<int64_t>{images, filters, size, size};
  }
};

/// ResNet-50's 3x3 convolutions of its four stages and the first stage's 1x1 expansion (batch
/// 32), and VGG16's second convolution of each block (batch 8).
constexpr Layer kLayers[] = {
    {"resnet_56_3x3", "resnet 56x56 64->64 3x3", 32, 64, 56, 64, 3},
    {"resnet_28_3x3", "resnet 28x28 128->128 3x3", 32, 128, 28, 128, 3},
    {"resnet_14_3x3", "resnet 14x14 256->256 3x3", 32, 256, 14, 256, 3},
    {"resnet_7_3x3", "resnet 7x7 512->512 3x3", 32, 512, 7, 512, 3},
    {"resnet_56_1x1", "resnet 56x56 64->256 1x1", 32, 64, 56, 256, 1},
    {"vgg_224", "vgg16 224x224 64->64 3x3", 8, 64, 224, 64, 3},
    {"vgg_112", "vgg16 112x112 128->128 3x3", 8, 128, 112, 128, 3},
    {"vgg_56", "vgg16 56x56 256->256 3x3", 8, 256, 56, 256, 3},
    {"vgg_28", "vgg16 28x28 512->512 3x3", 8, 512, 28, 512, 3},
    {"vgg_14", "vgg16 14x14 512->512 3x3", 8, 512, 14, 512, 3},
};

/// --quick: one 3x3 and the 1x1.
bool inQuick(const Layer &layer) {
  return layer.id == "resnet_28_3x3" || layer.id == "resnet_56_1x1";
}

std::string workloadName(const Precision &precision, const Layer &layer) {
  return fmt::format("conv_{}_{}", precision.name, layer.id);
}

/// Timed runs per side: each kiln run also copies x in and y out (up to 100 MiB each way).
int runsFor(const Layer &layer, bool quick) {
  if (quick)
    return 3;
  return layer.flops() >= 2e10 ? 10 : 20;
}

/// Uniform in [-1, 1) (multiples of 2^-23, exact in f32), rounded to `dtype` to nearest even.
HostTensor uniformOperand(DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  KILN_CHECK(dtype == DType::BF16 || dtype == DType::F32, "conv operands are bf16 or f32");
  HostTensor tensor(dtype, std::move(shape));
  Rng rng(seed);
  std::span<uint16_t> halves = tensor.as<uint16_t>();
  std::span<float> floats = tensor.as<float>();
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    float value = float(int64_t(rng.nextU64() >> 40)) * 0x1p-23f - 1.0f;
    if (dtype == DType::BF16)
      halves[i] = floatToBFloat16Bits(value);
    else
      floats[i] = value;
  }
  return tensor;
}

/// fp64 sums at sampled output elements (the first and the last, each a corner whose
/// window reaches into the padding, then random ones).
struct SampledReference {
  std::vector<int64_t> indices = {}; ///< flat indices into y
  std::vector<double> sum = {}, absSum = {}; ///< sum x w and sum |x w| over each window
};

SampledReference sampleReference(const Precision &precision, const Layer &layer,
                                 const HostTensor &x, const HostTensor &w) {
  const int64_t n = layer.images, c = layer.channels, s = layer.size, o = layer.filters,
                k = layer.kernel, pad = layer.padding();
  const bool nhwc = precision.layout == Layout::NHWC;
  const int64_t outputs = n * o * s * s;
  SampledReference reference{.indices = {0, outputs - 1}};
  Rng rng(7);
  while (reference.indices.size() < kSamples)
    reference.indices.push_back(static_cast<int64_t>(rng.nextU64() % uint64_t(outputs)));
  for (int64_t index : reference.indices) {
    int64_t image, filter, row, column;
    if (nhwc) {
      filter = index % o;
      column = index / o % s;
      row = index / (o * s) % s;
      image = index / (o * s * s);
    } else {
      column = index % s;
      row = index / s % s;
      filter = index / (s * s) % o;
      image = index / (s * s * o);
    }
    double sum = 0, absSum = 0;
    for (int64_t kh = 0; kh < k; ++kh)
      for (int64_t kw = 0; kw < k; ++kw) {
        int64_t ih = row + kh - pad, iw = column + kw - pad;
        if (ih < 0 || ih >= s || iw < 0 || iw >= s)
          continue;
        for (int64_t ci = 0; ci < c; ++ci) {
          int64_t xi = nhwc ? ((image * s + ih) * s + iw) * c + ci
                            : ((image * c + ci) * s + ih) * s + iw;
          int64_t wi = nhwc ? ((filter * k + kh) * k + kw) * c + ci
                            : ((filter * c + ci) * k + kh) * k + kw;
          double product = x.getDouble(xi) * w.getDouble(wi);
          sum += product;
          absSum += std::abs(product);
        }
      }
    reference.sum.push_back(sum);
    reference.absSum.push_back(absSum);
  }
  return reference;
}

/// The sampled elements of `y` against `reference`, within
/// resultRounding * |y| + (kAccumulation + slack) * sum |x w|.
std::string checkSampled(const Precision &precision, const SampledReference &reference,
                         const HostTensor &y, double slack) {
  for (size_t i = 0; i < reference.indices.size(); ++i) {
    double want = reference.sum[i];
    double bound = precision.resultRounding * std::abs(want) +
                   (kAccumulation + slack) * reference.absSum[i];
    double got = y.getDouble(reference.indices[i]);
    if (!(std::abs(got - want) <= bound))
      return fmt::format("y[{}] (flat) = {}, expected {} (bound {:.3g})", reference.indices[i],
                         got, want, bound);
  }
  return "ok";
}

/// kiln's side of a layer: compiled with `options` (plus the fused dump), run once on
/// poisoned buffers, its sampled elements checked.
struct KilnSide {
  std::optional<CompiledModel> model;
  NamedTensors inputs;
  HostTensor w, y;
  SampledReference reference;
  std::string schedule; ///< the one kiln picked by default
  std::string check;    ///< "ok", or what failed
};

Expected<KilnSide> runKiln(const CompileOptions &compileOptions, const Precision &precision,
                           const Layer &layer, uint64_t seed) {
  KilnSide side;
  side.inputs.emplace("x", uniformOperand(precision.dtype, layer.xShape(precision.layout),
                                          2 * seed));
  // w is a bound parameter: it stays on the device, so each run copies x in and y out, and
  // the kernel events leave both copies out anyway.
  Graph graph(workloadName(precision, layer));
  Tensor x = graph.input("x", layer.xShape(precision.layout), precision.dtype);
  Tensor w = graph.param(
      "w", uniformOperand(precision.dtype, layer.wShape(precision.layout), 2 * seed + 1));
  int64_t pad = layer.padding();
  graph.output("y", conv2d(x, w,
                           Conv2DOptions{.padding = Padding::symmetric(pad, pad),
                                         .layout = precision.layout}));
  std::ostringstream dump;
  CompileOptions options = compileOptions;
  if (precision.wgmma)
    options.chooseSchedule = [](const ir::Graph &, const passes::FusionGroup &group) {
      return lower::wgmmaContractionSchedule(group, *codegen::gpuTargetNamed("sm_90a"),
                                             /*tma=*/false); // conv2d keeps cp.async
    };
  options.dump |= kDumpFused;
  options.dumpStream = &dump;
  KILN_TRY(CompiledModel model, compileGraph(graph, options));
  side.schedule = schedulesInDump(dump.str(), "gpu.conv2d ", "?");
  KILN_TRY_VOID(model.bindParams(graph.paramValues()));
  side.w = graph.paramValues().at("w");
  KILN_TRY(NamedTensors outputs, model.run(side.inputs, RunOptions{.poisonBuffers = true}));
  side.y = std::move(outputs.at("y"));
  side.model.emplace(std::move(model));
  side.reference = sampleReference(precision, layer, side.inputs.at("x"), side.w);
  side.check = checkSampled(precision, side.reference, side.y, 0);
  return side;
}

struct ConvResult {
  std::string schedule, cudnnAlgorithm;
  KernelTiming kiln;
  double cudnnMedianMs = 0;
  double relativeDifference = 0; ///< max |kiln - cuDNN| / max |cuDNN|
  std::string check;             ///< "ok", or what failed
};

Expected<ConvResult> measureConv(BenchContext &context, runtime::cuda::CudaDevice &gpu,
                                 runtime::Stream stream, const Precision &precision,
                                 const Layer &layer, uint64_t seed) {
  ConvResult result;
  KILN_TRY(KilnSide kiln, runKiln(context.compileOptions, precision, layer, seed));
  result.schedule = kiln.schedule;
  result.check = kiln.check;
  if (result.check != "ok")
    return result;

  runtime::Device &device = *context.gpu.device;
  const HostTensor &x = kiln.inputs.at("x");
  KILN_TRY(DeviceBuffer dx, DeviceBuffer::allocate(device, int64_t(x.bytes().size())));
  KILN_TRY(DeviceBuffer dw, DeviceBuffer::allocate(device, int64_t(kiln.w.bytes().size())));
  KILN_TRY(DeviceBuffer dy, DeviceBuffer::allocate(device, int64_t(kiln.y.bytes().size())));
  KILN_TRY_VOID(device.copyToDevice(dx.ptr(), x.bytes().data(), dx.bytes(), stream));
  KILN_TRY_VOID(device.copyToDevice(dw.ptr(), kiln.w.bytes().data(), dw.bytes(), stream));
  // kiln's own cuDNN kernel (the tuner's candidate), without its bias and relu: f32 with
  // CUDNN_FMA_MATH (no tf32), bf16 with tensor-op math.
  int64_t outSize = layer.size + 2 * layer.padding() - layer.kernel + 1;
  runtime::cudnn::Conv2DProblem problem{
      .dtype = precision.dtype,
      .layout = precision.layout == Layout::NHWC ? runtime::cudnn::ConvLayout::Nhwc
                                                 : runtime::cudnn::ConvLayout::Nchw,
      .batch = layer.images,
      .inChannels = layer.channels,
      .height = layer.size,
      .width = layer.size,
      .outChannels = layer.filters,
      .kernelH = layer.kernel,
      .kernelW = layer.kernel,
      .outHeight = outSize,
      .outWidth = outSize,
      .padding = {layer.padding(), layer.padding()},
      .args = {}};
  // Find, untimed: it runs every algorithm, FFT ones included, and keeps the fastest.
  KILN_TRY(std::shared_ptr<runtime::cudnn::CudnnConv2D> convolution,
           runtime::cudnn::CudnnConv2D::create(
               problem, gpu,
               {.workspaceLimitBytes = kMaxFindWorkspace,
                .allowFft = true,
                .fixed = std::nullopt,
                .name = "cudnn"}));
  result.cudnnAlgorithm = convolution->configText();
  KILN_TRY_VOID(device.fill(dy.ptr(), 0xff, dy.bytes(), stream)); // NaN until written
  const std::array<runtime::DevicePtr, 3> args{dx.ptr(), dw.ptr(), dy.ptr()};
  auto forward = [&] { return convolution->launch(args.data(), stream); };
  KILN_TRY_VOID(forward());
  HostTensor cudnnY(precision.dtype, layer.yShape(precision.layout));
  KILN_TRY_VOID(device.copyToHost(cudnnY.bytes().data(), dy.ptr(), dy.bytes(), stream));
  KILN_TRY_VOID(device.synchronize(stream));
  bool transforms = runtime::cudnn::transformsOperands(convolution->choice());
  if (std::string check = checkSampled(precision, kiln.reference, cudnnY,
                                       transforms ? precision.cudnnTransformSlack : 0);
      check != "ok") {
    result.check = "cuDNN itself: " + check;
    return result;
  }

  result.check = compareWithLibrary(kiln.y, cudnnY, "cuDNN", result.cudnnAlgorithm,
                                    transforms ? precision.transformAgreement : precision.agreement,
                                    result.relativeDifference);
  if (result.check != "ok")
    return result;

  int runs = runsFor(layer, context.quick);
  KILN_TRY(result.kiln, timeKernels(*kiln.model, kiln.inputs, runs));
  std::vector<double> cudnnMs;
  KILN_TRY_VOID(forward()); // one more untimed run after the check's copy
  for (int run = 0; run < runs; ++run) {
    KILN_TRY(double ms, timeOnStream(device, stream, forward));
    cudnnMs.push_back(ms);
  }
  result.cudnnMedianMs = median(cudnnMs);
  return result;
}

std::string tflops(double flops, double ms) {
  return fmt::format("{:.1f}", flops / (ms * 1e-3) / 1e12);
}

std::string shapeText(const Layer &layer, Layout layout) {
  std::vector<int64_t> x = layer.xShape(layout);
  return fmt::format("{}x{}x{}x{} -> {}, {}x{}", x[0], x[1], x[2], x[3], layer.filters,
                     layer.kernel, layer.kernel);
}

Table tableFor(const Precision &precision, const runtime::cudnn::CudnnLibrary &cudnn, bool quick) {
  return Table{
      .title = fmt::format("(f) conv2d {} {}: kiln ({}) vs cuDNN", precision.name,
                           precision.layoutName, precision.kilnEngine),
      .columns = {"layer", fmt::format("x ({}) -> filters, window", precision.layoutName),
                  precision.wgmma ? "kiln schedule (wgmma, forced)" : "kiln schedule (default)",
                  "cuDNN algorithm (Find)", "kiln ms", "cuDNN ms",
                  "kiln TFLOP/s", "cuDNN TFLOP/s", "kiln/cuDNN", "max diff / max|y|", "check"},
      .note = fmt::format(
          "{} x, w and y in {}, stride 1, padding 1 for 3x3 and 0 for 1x1. kiln: a conv2d "
          "(layout \"{}\"{}) compiled with the default options, x an input (copied in by each "
          "run, outside the timed kernel), w a bound parameter (on the device once); the "
          "schedule is {}, read from the compile's fused dump. cuDNN {} "
          "({}): the legacy API, CUDNN_CROSS_CORRELATION, compute type float, {}, the "
          "algorithm cudnnFindConvolutionForwardAlgorithmEx timed fastest (once, untimed), "
          "its workspace allocated through kiln's device, inputs uploaded once. Inputs "
          "uniform in [-1, 1) rounded to the dtype. Medians of {} runs after an untimed one, "
          "each side timed with device events (kiln: the run profile's kernel events; cuDNN: "
          "events around cudnnConvolutionForward on its own stream); TFLOP/s = 2 N K P Q C R "
          "S / time; kiln/cuDNN = cuDNN time / kiln time. Checked before timing: {} sampled "
          "output elements of each side (the first and last among them) against fp64 sums "
          "over the window, within 2^{} * |y| + {:.0e} * sum|x w| (cuDNN's, when its "
          "algorithm is FFT or Winograd: + {:.2g} * sum|x w|); kiln's whole output against "
          "cuDNN's (max difference <= {:.0e} of the largest |y|, {:.0e} against FFT or "
          "Winograd; no NaN or inf). {}",
          precision.name == "f32" ? "f32" : "bf16 (fp32 accumulation, result in bf16)",
          precision.layoutName, layoutName(precision.layout),
          precision.dtype == DType::BF16 ? ", bf16 operands, accumulate f32" : "",
          precision.wgmma ? "the wgmma default (lower::wgmmaContractionSchedule), forced"
                          : "the heuristic default",
          cudnn.versionText(), cudnn.libraryPath, precision.cudnnMath,
          quick ? "3" : "10 (>= 2e10 flops) or 20", kSamples,
          int(std::lround(std::log2(precision.resultRounding))), kAccumulation,
          precision.cudnnTransformSlack, precision.agreement, precision.transformAgreement,
          precision.wgmma ? std::string("No goal: the default's table holds it.")
                          : fmt::format("Goal: every layer >= {:.0f}% of cuDNN.", kGoal * 100))};
}

} // namespace

void benchConvVsCudnn(BenchContext &context) {
  struct Entry {
    const Precision *precision;
    const Layer *layer;
  };
  std::vector<Entry> entries;
  for (const Precision &precision : kPrecisions)
    for (const Layer &layer : kLayers)
      if ((!context.quick || inQuick(layer)) &&
          context.selected(workloadName(precision, layer)))
        entries.push_back({&precision, &layer});
  if (entries.empty())
    return;
  auto goalFor = [](const Precision &precision) {
    return Goal{.name = fmt::format("conv2d {} {} vs cuDNN (worst of the ResNet and VGG16 "
                                    "layers)",
                                    precision.name, precision.layoutName),
                .target = fmt::format(">= {:.0f}%", kGoal * 100)};
  };
  auto skipAll = [&](const std::string &why) {
    fmt::print("== (f) conv2d vs cuDNN: skipped: {}\n\n", why);
    for (const Precision &precision : kPrecisions) {
      if (precision.wgmma)
        continue; // no goal of its own
      Goal goal = goalFor(precision);
      goal.measured = "skipped: " + why;
      context.report.addGoal(std::move(goal));
    }
  };
  if (context.hostDevice)
    return skipAll("--host-device has no GPU; cuDNN and kiln's GPU kernels need one");
  auto stream = DeviceStream::create(*context.gpu.device);
  if (!stream) {
    context.report.addFailure(fmt::format("conv2d vs cuDNN: {}", stream.error().message()));
    return;
  }
  // cuDNN is optional: without a cuDNN 9 the section says why (every path tried) and skips.
  auto cudnn = runtime::cudnn::cudnnLibrary();
  if (!cudnn)
    return skipAll(cudnn.error().message());
  auto *gpu = dynamic_cast<runtime::cuda::CudaDevice *>(context.gpu.device.get());
  if (gpu == nullptr) {
    context.report.addFailure("conv2d vs cuDNN: the benchmark's device is not a CUDA device");
    return;
  }
  fmt::print("(f) cuDNN {} from {}\n", (*cudnn)->versionText(), (*cudnn)->libraryPath);
  auto selectedAny = [&](const Precision &precision) {
    return std::ranges::any_of(entries, [&](const Entry &e) { return e.precision == &precision; });
  };

  uint64_t seed = 31;
  for (const Precision &precision : kPrecisions) {
    if (precision.wgmma && (context.gpu.ccMajor != 9 || !selectedAny(precision))) {
      if (selectedAny(precision))
        fmt::print("== (f) conv2d {}: skipped: wgmma needs sm_90a; this GPU is sm_{}{}\n\n",
                   precision.name, context.gpu.ccMajor, context.gpu.ccMinor);
      continue;
    }
    Goal goal = goalFor(precision);
    if (precision.dtype == DType::BF16 && context.gpu.ccMajor < 8) {
      goal.measured = fmt::format("skipped: kiln's bf16 tensor-core conv2d needs sm_80 or "
                                  "later; this GPU is sm_{}{}",
                                  context.gpu.ccMajor, context.gpu.ccMinor);
      fmt::print("== (f) conv2d bf16: {}\n\n", goal.measured);
      context.report.addGoal(std::move(goal));
      continue;
    }
    Table table = tableFor(precision, **cudnn, context.quick);
    int measured = 0, layers = 0;
    std::optional<double> worstRatio;
    std::string worstLayer, failure;
    for (const Entry &entry : entries) {
      if (entry.precision != &precision)
        continue;
      const Layer &layer = *entry.layer;
      ++layers;
      std::string shape = shapeText(layer, precision.layout);
      auto result = measureConv(context, *gpu, stream->get(), precision, layer, seed++);
      if (!result || result->check != "ok") {
        std::string why = result ? result->check : result.error().message();
        context.report.addFailure(
            fmt::format("conv2d {} {}: {}", precision.name, layer.label, why));
        table.rows.push_back({std::string(layer.label), shape, result ? result->schedule : "—",
                              result ? result->cudnnAlgorithm : "—", "—", "—", "—", "—", "—",
                              "—", result ? "MISMATCH" : "error"});
        if (failure.empty())
          failure = fmt::format("{}: {}", layer.label, why);
        continue;
      }
      ++measured;
      double ratio = result->cudnnMedianMs / result->kiln.medianMs;
      if (!worstRatio || ratio < *worstRatio) {
        worstRatio = ratio;
        worstLayer = layer.label;
      }
      table.rows.push_back({std::string(layer.label), shape, result->schedule,
                            result->cudnnAlgorithm, fmt::format("{:.4f}", result->kiln.medianMs),
                            fmt::format("{:.4f}", result->cudnnMedianMs),
                            tflops(layer.flops(), result->kiln.medianMs),
                            tflops(layer.flops(), result->cudnnMedianMs),
                            fmt::format("{:.0f}%", ratio * 100),
                            fmt::format("{:.2e}", result->relativeDifference), "ok"});
    }
    if (!table.rows.empty())
      context.report.addTable(std::move(table));
    if (precision.wgmma)
      continue; // rows beside the default's; the goal is the default's
    if (layers == 0) {
      goal.measured = "not run (--filter)";
    } else if (!failure.empty()) {
      goal.measured = "failed: " + failure;
    } else if (layers == int(std::size(kLayers))) {
      goal.measured = fmt::format("{:.0f}% (worst: {})", *worstRatio * 100, worstLayer);
      goal.status = *worstRatio >= kGoal ? GoalStatus::Met : GoalStatus::Missed;
    } else {
      goal.measured = fmt::format("not run ({}); worst of the {} layers run: {:.0f}% ({})",
                                  context.quick ? "--quick" : "--filter", measured,
                                  *worstRatio * 100, worstLayer);
    }
    context.report.addGoal(std::move(goal));
  }
}

} // namespace kiln::bench
