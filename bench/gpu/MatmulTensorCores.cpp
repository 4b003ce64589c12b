// Section (e): kiln's tensor-core GEMMs (mma.sync on bf16 or f16 operands, or on
// f32 ones rounded to tf32) against cuBLAS GemmEx on the same GPU and inputs.
#include "bench/gpu/Cublas.h"
#include "bench/FusedSchedules.h"
#include "bench/gpu/DeviceTimer.h"
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"
#include "frontend/Ops.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "support/FloatConvert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

namespace kiln::bench {

namespace {

constexpr double kGoal = 0.90;
constexpr int64_t kGoalSize = 8192;
/// The sampled check's grid: 256 elements.
constexpr int kSampleRows = 16, kSampleColumns = 16;
/// fp32 accumulation of K <= 8192 products in any order (blocks, split-K):
/// the sampled bound's share that scales with sum |a_k b_k|. The worst case
/// is (K-1) * 2^-24 (4.9e-4 at K = 8192); random signs stay far below 2e-5,
/// while one lost k-step of 16 products (about sqrt(16/9) = 1.3 on these
/// inputs) is several times the whole bound even at K = 8192.
constexpr double kAccumulation = 2e-5;
/// cuBLAS rounds tf32 operands by a rule it does not document (to nearest or
/// by truncation): each may sit 1.5 tf32 ulps (1.5 * 2^-10 relative) from
/// kiln's ties-away rounding, so a product up to about 2^-8.4 relative.
constexpr double kCublasTf32Rounding = 0x1p-8;

/// One way of feeding the tensor cores.
struct Precision {
  std::string_view name; ///< "bf16", "f16", "tf32"
  DType dtype;           ///< of both operands and of the result
  bool tf32;             ///< f32 operands rounded to tf32 (allow_tf32)
  /// Storing the fp32 accumulator in `dtype`: half an ulp, relative.
  double resultRounding;
  /// The largest max |kiln - cuBLAS| / max |c| accepted: one ulp of the result
  /// relative to it, with margin (bf16 2^-7, f16 2^-10); for tf32 (an f32
  /// result) the two sides' differing operand rounding, about 2^-10 of |c|.
  double agreement;
  std::string_view cublasCompute; ///< the GemmEx compute type, for the note
  /// Forces kiln's warpgroup (wgmma) template, sm_90a only, instead of the default schedule
  /// (mma.sync until the wgmma path is measured, docs/gpu-tensor-cores.md).
  bool wgmma = false;
  /// w is stored [n, k] (matmul with transpose_b): K contiguous in both operands, as fp8
  /// tensor cores (and cublasLt's fp8 GEMMs) take them.
  bool transposedB = false;
  /// With wgmma: the operands arrive by a producer warpgroup's bulk tensor copies (TMA).
  bool tma = false;
  /// With tma: on a persistent grid (where the default does not split K).
  bool persistent = false;
  /// The dtype of cuBLAS's result: the operands' but for e4m3, where cublasLt writes bf16.
  DType cublasResult() const { return dtype == DType::F8E4M3 ? DType::BF16 : dtype; }
};

constexpr Precision kPrecisions[] = {
    {"bf16", DType::BF16, false, 0x1p-8, 1e-2, "CUBLAS_COMPUTE_32F"},
    {"f16", DType::F16, false, 0x1p-11, 2e-3, "CUBLAS_COMPUTE_32F"},
    {"tf32", DType::F32, true, 0x1p-24, 5e-3, "CUBLAS_COMPUTE_32F_FAST_TF32"},
    {"bf16_wgmma", DType::BF16, false, 0x1p-8, 1e-2, "CUBLAS_COMPUTE_32F", true},
    {"f16_wgmma", DType::F16, false, 0x1p-11, 2e-3, "CUBLAS_COMPUTE_32F", true},
    {"bf16_tma", DType::BF16, false, 0x1p-8, 1e-2, "CUBLAS_COMPUTE_32F", true, false, true},
    {"bf16_tma_persistent", DType::BF16, false, 0x1p-8, 1e-2, "CUBLAS_COMPUTE_32F", true, false,
     true, true},
    // kiln rounds an e4m3 product's result to e4m3 (3 mantissa bits: half an ulp is 2^-4 of
    // it); cublasLt writes bf16, so the two differ by up to about that.
    {"e4m3", DType::F8E4M3, false, 0x1p-4, 0.07, "cublasLt CUBLAS_COMPUTE_32F, bf16 result",
     false, true},
    {"e4m3_wgmma", DType::F8E4M3, false, 0x1p-4, 0.07,
     "cublasLt CUBLAS_COMPUTE_32F, bf16 result", true, true},
};

/// c[m,n] = x[m,k] @ w[k,n].
struct Workload {
  std::string id;    ///< in the workload's name, for --filter: "n4096", "gpt2s_qkv_t512"
  std::string label; ///< in the table: "4096^3", "gpt2-small qkv, 512 tok"
  int64_t m, k, n;
  double flops() const { return 2.0 * double(m) * double(k) * double(n); }
};

/// n^3 at 4096 and 8192, then the four projections of GPT-2 small (768 wide)
/// and large (1280 wide) with 512 and 8192 tokens (M = tokens, K = in, N = out),
/// then narrow outputs over a long K, where the default splits K (a 512 x 512
/// output is 16 tiles of 128 x 128 on 132 SMs). --quick: 4096^3, 512 tokens
/// and the first narrow one.
std::vector<Workload> workloads(bool quick) {
  std::vector<Workload> list;
  for (int64_t n : {int64_t{4096}, kGoalSize})
    if (!quick || n < kGoalSize)
      list.push_back({fmt::format("n{}", n), fmt::format("{}^3", n), n, n, n});
  struct Model {
    std::string_view id, label;
    int64_t width;
  };
  struct Projection {
    std::string_view id;
    int64_t in, out; ///< multiples of the width
  };
  constexpr Model kModels[] = {{"gpt2s", "gpt2-small", 768}, {"gpt2l", "gpt2-large", 1280}};
  constexpr Projection kProjections[] = {
      {"qkv", 1, 3}, {"attn_out", 1, 1}, {"mlp_up", 1, 4}, {"mlp_down", 4, 1}};
  for (int64_t tokens : {int64_t{512}, int64_t{8192}}) {
    if (quick && tokens > 512)
      continue;
    for (const Model &model : kModels)
      for (const Projection &projection : kProjections)
        list.push_back({fmt::format("{}_{}_t{}", model.id, projection.id, tokens),
                        fmt::format("{} {}, {} tok", model.label, projection.id, tokens), tokens,
                        projection.in * model.width, projection.out * model.width});
  }
  struct Narrow {
    int64_t m, k, n;
  };
  constexpr Narrow kNarrow[] = {{512, 8192, 512}, {256, 16384, 1024}, {64, 12288, 768}};
  for (const Narrow &narrow : kNarrow) {
    if (quick && narrow.m != kNarrow[0].m)
      continue;
    list.push_back({fmt::format("narrow_{}x{}_k{}", narrow.m, narrow.n, narrow.k),
                    fmt::format("{} x {} out, K {} (split-K)", narrow.m, narrow.n, narrow.k),
                    narrow.m, narrow.k, narrow.n});
  }
  return list;
}

/// Timed runs per side: fewer where one run is long (8192^3 bf16 is about
/// 1.4 ms on cuBLAS, and each kiln run also copies x in and c out).
int runsFor(const Workload &workload, bool quick) {
  if (quick)
    return 3;
  double flops = workload.flops();
  return flops >= 5e11 ? 5 : flops >= 1e11 ? 10 : 20;
}

/// Uniform in [-1, 1) (multiples of 2^-23, exact in f32), rounded to `dtype`
/// to nearest even.
HostTensor uniformOperand(DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  KILN_CHECK(dtype == DType::BF16 || dtype == DType::F16 || dtype == DType::F32 ||
                 dtype == DType::F8E4M3,
             "tensor-core operands are bf16, f16, f32 or e4m3");
  HostTensor tensor(dtype, std::move(shape));
  forChunks(tensor.numElements(), [&](int chunk, int64_t begin, int64_t end) {
    Rng rng(seed * kChunks + uint64_t(chunk));
    for (int64_t i = begin; i < end; ++i) {
      float value = float(int64_t(rng.nextU64() >> 40)) * 0x1p-23f - 1.0f;
      switch (dtype) {
      case DType::BF16: tensor.as<uint16_t>()[i] = floatToBFloat16Bits(value); break;
      case DType::F16: tensor.as<uint16_t>()[i] = floatToHalfBits(value); break;
      case DType::F8E4M3: tensor.as<uint8_t>()[i] = floatToF8E4M3Bits(value); break;
      default: tensor.as<float>()[i] = value; break;
      }
    }
  });
  return tensor;
}

/// fp64 dot products at a grid of sampled elements of c = a @ b, of the
/// operands as the tensor cores see them (tf32: each f32 rounded as
/// cvt.rna.tf32.f32 does). A grid, so that the sampled columns of b are read
/// once: one strided walk down an 8192-row column per sample took seconds.
struct SampledReference {
  /// The last row and column first: the edge tiles.
  std::vector<int64_t> rows = {}, columns = {};
  /// [row * kSampleColumns + column]: sum a_k b_k and sum |a_k b_k|.
  std::vector<double> sum = {}, absSum = {};
};

SampledReference sampleReference(const Precision &precision, const Workload &workload,
                                 const HostTensor &a, const HostTensor &b) {
  auto operand = [&](const HostTensor &tensor, int64_t index) {
    return precision.tf32 ? double(roundFloatToTf32(tensor.as<float>()[index]))
                          : tensor.getDouble(index);
  };
  const int64_t m = workload.m, k = workload.k, n = workload.n;
  SampledReference reference{.rows = {m - 1}, .columns = {n - 1}};
  Rng rng(7);
  while (reference.rows.size() < kSampleRows)
    reference.rows.push_back(static_cast<int64_t>(rng.nextU64() % uint64_t(m)));
  while (reference.columns.size() < kSampleColumns)
    reference.columns.push_back(static_cast<int64_t>(rng.nextU64() % uint64_t(n)));
  std::vector<double> aRows(kSampleRows * k), bColumns(kSampleColumns * k);
  for (int r = 0; r < kSampleRows; ++r)
    for (int64_t kk = 0; kk < k; ++kk)
      aRows[r * k + kk] = operand(a, reference.rows[r] * k + kk);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int c = 0; c < kSampleColumns; ++c)
      bColumns[c * k + kk] = operand(b, precision.transposedB ? reference.columns[c] * k + kk
                                                              : kk * n + reference.columns[c]);
  for (int r = 0; r < kSampleRows; ++r)
    for (int c = 0; c < kSampleColumns; ++c) {
      double sum = 0, absSum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        double product = aRows[r * k + kk] * bColumns[c * k + kk];
        sum += product;
        absSum += std::abs(product);
      }
      reference.sum.push_back(sum);
      reference.absSum.push_back(absSum);
    }
  return reference;
}

/// The sampled elements of `c` against `reference`, within
/// resultRounding * |c| + (kAccumulation + slack) * sum |a_k b_k|.
std::string checkSampled(const Precision &precision, const SampledReference &reference,
                         int64_t n, const HostTensor &c, double slack) {
  for (int r = 0; r < kSampleRows; ++r)
    for (int col = 0; col < kSampleColumns; ++col) {
      int64_t i = reference.rows[r], j = reference.columns[col];
      double want = reference.sum[r * kSampleColumns + col];
      double bound = precision.resultRounding * std::abs(want) +
                     (kAccumulation + slack) * reference.absSum[r * kSampleColumns + col];
      double got = c.getDouble(i * n + j);
      if (!(std::abs(got - want) <= bound))
        return fmt::format("c[{}, {}] = {}, expected {} (bound {:.3g})", i, j, got, want, bound);
    }
  return "ok";
}

struct GemmResult {
  std::string schedule; ///< the one kiln picked by default
  KernelTiming kiln;
  double cublasMedianMs = 0;
  double relativeDifference = 0; ///< max |kiln - cuBLAS| / max |cuBLAS|
  std::string check;             ///< "ok", or what failed
};

Expected<GemmResult> measureGemm(BenchContext &context, Cublas &cublas, runtime::Stream stream,
                                 const Precision &precision, const Workload &workload,
                                 uint64_t seed) {
  const int64_t m = workload.m, k = workload.k, n = workload.n;
  NamedTensors inputs;
  inputs.emplace("x", uniformOperand(precision.dtype, {m, k}, 2 * seed));
  const HostTensor &x = inputs.at("x");

  // w is a bound parameter: it stays on the device, so each run copies x in
  // and c out, and the kernel events leave both copies out anyway.
  Graph graph(fmt::format("tc_{}_{}", precision.name, workload.id));
  Tensor xTensor = graph.input("x", {m, k}, precision.dtype);
  std::vector<int64_t> wShape = precision.transposedB ? std::vector<int64_t>{n, k}
                                                      : std::vector<int64_t>{k, n};
  Tensor wTensor = graph.param("w", uniformOperand(precision.dtype, wShape, 2 * seed + 1));
  graph.output("c", matmul(xTensor, wTensor,
                           MatMulOptions{.transposeB = precision.transposedB,
                                         .allowTf32 = precision.tf32}));
  std::ostringstream dump;
  CompileOptions options = context.compileOptions;
  if (precision.wgmma)
    options.chooseSchedule = [precision](const ir::Graph &, const passes::FusionGroup &group) {
      std::optional<lower::Schedule> chosen = lower::wgmmaContractionSchedule(
          group, *codegen::gpuTargetNamed("sm_90a"), precision.tma);
      auto *gemm = chosen ? std::get_if<lower::GpuMatMulSchedule>(&*chosen) : nullptr;
      if (precision.persistent && gemm && gemm->tma && gemm->splitK == 1)
        gemm->persistent = true;
      return chosen;
    };
  options.dump |= kDumpFused;
  options.dumpStream = &dump;
  KILN_TRY(CompiledModel model, compileGraph(graph, options));
  GemmResult result;
  result.schedule = schedulesInDump(dump.str(), "gpu.matmul ", "?");
  KILN_TRY_VOID(model.bindParams(graph.paramValues()));
  const HostTensor &w = graph.paramValues().at("w");

  KILN_TRY(NamedTensors outputs, model.run(inputs, RunOptions{.poisonBuffers = true}));
  const HostTensor &kilnC = outputs.at("c");
  SampledReference reference = sampleReference(precision, workload, x, w);
  result.check = checkSampled(precision, reference, n, kilnC, 0);
  if (result.check != "ok")
    return result;

  runtime::Device &device = *context.gpu.device;
  const int64_t elementBytes = dtypeByteSize(precision.dtype);
  KILN_TRY(DeviceBuffer da, DeviceBuffer::allocate(device, m * k * elementBytes));
  KILN_TRY(DeviceBuffer db, DeviceBuffer::allocate(device, k * n * elementBytes));
  const DType cublasDtype = precision.cublasResult();
  KILN_TRY(DeviceBuffer dc, DeviceBuffer::allocate(device, m * n * dtypeByteSize(cublasDtype)));
  KILN_TRY_VOID(device.copyToDevice(da.ptr(), x.bytes().data(), da.bytes(), stream));
  KILN_TRY_VOID(device.copyToDevice(db.ptr(), w.bytes().data(), db.bytes(), stream));
  KILN_TRY_VOID(device.fill(dc.ptr(), 0xff, dc.bytes(), stream)); // NaN until written
  auto gemm = [&] {
    if (precision.dtype == DType::F8E4M3)
      return cublas.gemmE4m3RowMajor(int(m), int(n), int(k), da.ptr(), db.ptr(), dc.ptr());
    return cublas.gemmExRowMajor(precision.dtype, precision.tf32, int(m), int(n), int(k),
                                 da.ptr(), db.ptr(), dc.ptr());
  };
  KILN_TRY_VOID(gemm()); // untimed: cuBLAS picks and loads its kernel
  HostTensor cublasC(cublasDtype, {m, n});
  KILN_TRY_VOID(device.copyToHost(cublasC.bytes().data(), dc.ptr(), dc.bytes(), stream));
  KILN_TRY_VOID(device.synchronize(stream));
  if (std::string check = checkSampled(precision, reference, n, cublasC,
                                       precision.tf32 ? kCublasTf32Rounding : 0);
      check != "ok") {
    result.check = "cuBLAS itself: " + check;
    return result;
  }

  result.check = compareWithLibrary(kilnC, cublasC, "cuBLAS", "", precision.agreement,
                                    result.relativeDifference);
  if (result.check != "ok")
    return result;

  int runs = runsFor(workload, context.quick);
  KILN_TRY(result.kiln, timeKernels(model, inputs, runs));
  std::vector<double> cublasMs;
  for (int run = 0; run < runs; ++run) {
    KILN_TRY(double ms, timeOnStream(device, stream, gemm));
    cublasMs.push_back(ms);
  }
  result.cublasMedianMs = median(cublasMs);
  return result;
}

std::string tflops(double flops, double ms) {
  return fmt::format("{:.1f}", flops / (ms * 1e-3) / 1e12);
}

Table tableFor(const Precision &precision, const std::string &library, bool quick) {
  std::string operands =
      precision.tf32
          ? "f32 operands and result, allow_tf32 (kiln rounds each operand to tf32, ties away "
            "from zero)"
          : fmt::format("{} operands and result, fp32 accumulation{}", dtypeName(precision.dtype),
                        precision.dtype == DType::F8E4M3
                            ? " (cublasLt's result bf16, its fp8 GEMMs' usual output)"
                            : "");
  std::string tolerance =
      precision.tf32
          ? fmt::format("{:.0e} * sum|a_k b_k| (cuBLAS's own: + 2^-8 * sum|a_k b_k|, for its "
                        "undocumented tf32 rounding)",
                        kAccumulation)
          : fmt::format("2^{} * |c| + {:.0e} * sum|a_k b_k|",
                        int(std::lround(std::log2(precision.resultRounding))), kAccumulation);
  return Table{
      .title = fmt::format("(e) {} tensor-core GEMM: kiln ({}) vs cuBLAS{}", precision.name,
                           precision.persistent ? "wgmma fed by TMA, persistent, forced"
                           : precision.tma      ? "wgmma fed by TMA, forced"
                           : precision.wgmma ? "wgmma, forced"
                                             : "default schedule",
                           precision.dtype == DType::F8E4M3 ? "Lt" : " GemmEx"),
      .columns = {"workload", "M x K x N", "kiln schedule (default)", "kiln ms", "cuBLAS ms",
                  "kiln TFLOP/s", "cuBLAS TFLOP/s", "kiln/cuBLAS", "max diff / max|c|",
                  "check"},
      .note = fmt::format(
          "{}. kiln: compiled with the default options, x [M,K] an input (copied in by each "
          "run, outside the timed kernel), w {} a bound parameter (on the device once); the "
          "schedule is read from the compile's fused dump. cuBLAS ({}): "
          "{}, {}, row-major as C^T = B^T A^T, inputs uploaded "
          "once. Inputs uniform in [-1, 1) rounded to the dtype. Medians of {} runs after an "
          "untimed one, each side timed with device events (kiln: the run profile's kernel "
          "events; cuBLAS: events around GemmEx on its own stream); TFLOP/s = 2MNK / time; "
          "kiln/cuBLAS = cuBLAS time / kiln time. Checked before timing: {} x {} sampled "
          "elements of each side (rows by columns, the last row and column among them) "
          "against fp64 dot products of the operands, within {}; kiln's whole output against "
          "cuBLAS's (max difference <= {:.0e} of the largest |c|, no NaN or inf).{}",
          operands, precision.transposedB ? "[N,K] (matmul transpose_b: K contiguous)" : "[K,N]",
          library,
          precision.dtype == DType::F8E4M3 ? "cublasLtMatmul (TN, the heuristic's first algorithm, "
                                             "no workspace)"
                                           : "cublasGemmEx (CUBLAS_GEMM_DEFAULT)",
          precision.cublasCompute,
          quick ? "3" : "5 (>= 5e11 flops), 10 (>= 1e11) or 20", kSampleRows, kSampleColumns,
          tolerance, precision.agreement,
          precision.name == "bf16"
              ? fmt::format(" Goal: {}^3 >= {:.0f}% of cuBLAS.", kGoalSize, kGoal * 100)
              : "")};
}

} // namespace

void benchTensorCoreMatmul(BenchContext &context) {
  struct Entry {
    const Precision *precision;
    Workload workload;
  };
  std::vector<Entry> entries;
  for (const Precision &precision : kPrecisions)
    for (Workload &workload : workloads(context.quick))
      if (context.selected(fmt::format("tc_{}_{}", precision.name, workload.id)))
        entries.push_back({&precision, std::move(workload)});
  if (entries.empty())
    return;
  Goal goal{.name = fmt::format("bf16 tensor-core GEMM {}^3 vs cuBLAS GemmEx", kGoalSize),
            .target = fmt::format(">= {:.0f}%", kGoal * 100)};
  auto skip = [&](const std::string &why) {
    fmt::print("== (e) tensor-core GEMM vs cuBLAS GemmEx: skipped: {}\n\n", why);
    goal.measured = "skipped: " + why;
    context.report.addGoal(std::move(goal));
  };
  if (context.hostDevice)
    return skip("--host-device has no GPU; cuBLAS and kiln's mma.sync kernels need one");
  if (context.gpu.ccMajor < 8)
    return skip(fmt::format("tensor-core GEMMs need sm_80 or later; this GPU is sm_{}{}",
                            context.gpu.ccMajor, context.gpu.ccMinor));
  auto stream = DeviceStream::create(*context.gpu.device);
  auto cublas = stream ? Cublas::open(stream->get())
                       : Expected<std::unique_ptr<Cublas>>(std::unexpected(stream.error()));
  if (!cublas) {
    context.report.addFailure(fmt::format("tensor-core GEMM: {}", cublas.error().message()));
    goal.measured = "cuBLAS unavailable: " + cublas.error().message();
    context.report.addGoal(std::move(goal));
    return;
  }

  std::optional<double> goalRatio;
  std::string goalFailure, quickFigure;
  uint64_t seed = 11;
  for (const Precision &precision : kPrecisions) {
    Table table = tableFor(precision, (*cublas)->libraryName(), context.quick);
    for (const Entry &entry : entries) {
      if (entry.precision != &precision)
        continue;
      int cc = context.gpu.ccMajor * 10 + context.gpu.ccMinor;
      std::string_view skipped = precision.wgmma && context.gpu.ccMajor != 9
                                     ? "skipped: wgmma needs sm_90a"
                                 : precision.dtype == DType::F8E4M3 && cc < 89
                                     ? "skipped: e4m3 tensor cores need sm_89"
                                     : "";
      if (!skipped.empty()) {
        table.rows.push_back({entry.workload.label, "—", "—", "—", "—", "—", "—", "—", "—",
                              std::string(skipped)});
        continue;
      }
      const Workload &workload = entry.workload;
      bool isGoal = precision.dtype == DType::BF16 && !precision.wgmma && workload.m == kGoalSize &&
                    workload.k == kGoalSize && workload.n == kGoalSize;
      std::string shape = fmt::format("{} x {} x {}", workload.m, workload.k, workload.n);
      auto result = measureGemm(context, **cublas, stream->get(), precision, workload, seed++);
      if (!result || result->check != "ok") {
        std::string why = result ? result->check : result.error().message();
        context.report.addFailure(
            fmt::format("tensor-core GEMM {} {}: {}", precision.name, workload.label, why));
        table.rows.push_back({workload.label, shape, result ? result->schedule : "—", "—", "—",
                              "—", "—", "—", "—", result ? "MISMATCH" : "error"});
        if (isGoal)
          goalFailure = why;
        continue;
      }
      double ratio = result->cublasMedianMs / result->kiln.medianMs;
      if (isGoal)
        goalRatio = ratio;
      if (precision.dtype == DType::BF16 && !precision.wgmma && workload.id == "n4096")
        quickFigure = fmt::format("{:.0f}% at 4096^3", ratio * 100);
      table.rows.push_back({workload.label, shape, result->schedule,
                            fmt::format("{:.4f}", result->kiln.medianMs),
                            fmt::format("{:.4f}", result->cublasMedianMs),
                            tflops(workload.flops(), result->kiln.medianMs),
                            tflops(workload.flops(), result->cublasMedianMs),
                            fmt::format("{:.0f}%", ratio * 100),
                            fmt::format("{:.2e}", result->relativeDifference), "ok"});
    }
    if (!table.rows.empty())
      context.report.addTable(std::move(table));
  }

  if (goalRatio) {
    goal.measured = fmt::format("{:.0f}%", *goalRatio * 100);
    goal.status = *goalRatio >= kGoal ? GoalStatus::Met : GoalStatus::Missed;
  } else if (!goalFailure.empty()) {
    goal.measured = "failed: " + goalFailure;
  } else {
    goal.measured = fmt::format("not run ({}){}", context.quick ? "--quick" : "--filter",
                                quickFigure.empty() ? "" : "; bf16 " + quickFigure);
  }
  context.report.addGoal(std::move(goal));
}

} // namespace kiln::bench
