// Section (c): kiln's fp32 matmul on the CUDA cores (no tf32) against cuBLAS
// SGEMM on the same GPU and the same inputs, each timed with device events.
#include "bench/gpu/Cublas.h"
#include "bench/gpu/DeviceTimer.h"
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"
#include "frontend/Ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace kiln::bench {

namespace {

constexpr double kGoal = 0.70;
constexpr int kRuns = 10, kRunsQuick = 3;
constexpr int kSamples = 256;
/// kiln against cuBLAS: max |difference| over max |cuBLAS|. Both accumulate
/// in fp32 in different orders; for K <= 4096 on normal inputs that stays
/// well below 1e-5 of the output's magnitude.
constexpr double kAgreement = 1e-4;

/// Sampled elements against fp64 dot products (bounded by the sum of
/// |products|, as cpu_bench does): the check that gates the timing.
std::string checkSampled(int64_t n, const HostTensor &a, const HostTensor &b,
                         const HostTensor &c) {
  auto av = a.as<float>(), bv = b.as<float>();
  Rng rng(7);
  for (int s = 0; s < kSamples; ++s) {
    int64_t i = static_cast<int64_t>(rng.nextU64() % uint64_t(n));
    int64_t j = static_cast<int64_t>(rng.nextU64() % uint64_t(n));
    if (s == 0)
      i = j = n - 1; // the last row and column: the edge tiles
    double sum = 0, absSum = 0;
    for (int64_t k = 0; k < n; ++k) {
      double product = double(av[i * n + k]) * double(bv[k * n + j]);
      sum += product;
      absSum += std::abs(product);
    }
    double got = c.getDouble(i * n + j);
    if (!(std::abs(got - sum) <= 1e-5 * absSum + 1e-6))
      return fmt::format("c[{}, {}] = {}, expected {}", i, j, got, sum);
  }
  return "ok";
}

struct MatmulResult {
  KernelTiming kiln;
  double cublasMedianMs = 0, cublasMinMs = 0;
  double relativeDifference = 0; ///< max |kiln - cuBLAS| / max |cuBLAS|
  std::string check;
};

Expected<MatmulResult> measureMatmul(BenchContext &context, Cublas &cublas,
                                     runtime::Stream stream, int64_t n) {
  Graph graph(fmt::format("matmul_{}", n));
  Tensor a = graph.input("a", {n, n});
  Tensor b = graph.input("b", {n, n});
  graph.output("c", matmul(a, b, MatMulOptions{.allowTf32 = false}));
  KILN_TRY(CompiledModel model, compileGraph(graph, context.compileOptions));
  NamedTensors inputs = randomInputs(graph.ir(), 3);
  KILN_TRY(NamedTensors outputs, model.run(inputs, RunOptions{.poisonBuffers = true}));
  const HostTensor &kilnC = outputs.at("c");
  MatmulResult result;
  result.check = checkSampled(n, inputs.at("a"), inputs.at("b"), kilnC);
  if (result.check != "ok")
    return result;

  runtime::Device &device = *context.gpu.device;
  int64_t bytes = n * n * int64_t(sizeof(float));
  KILN_TRY(DeviceBuffer da, DeviceBuffer::allocate(device, bytes));
  KILN_TRY(DeviceBuffer db, DeviceBuffer::allocate(device, bytes));
  KILN_TRY(DeviceBuffer dc, DeviceBuffer::allocate(device, bytes));
  KILN_TRY_VOID(device.copyToDevice(da.ptr(), inputs.at("a").bytes().data(), bytes, stream));
  KILN_TRY_VOID(device.copyToDevice(db.ptr(), inputs.at("b").bytes().data(), bytes, stream));
  KILN_TRY_VOID(device.fill(dc.ptr(), 0xff, bytes, stream)); // NaN until written
  auto sgemm = [&] { return cublas.sgemmRowMajor(int(n), int(n), int(n), da.ptr(), db.ptr(), dc.ptr()); };
  KILN_TRY_VOID(sgemm()); // untimed: cuBLAS picks and loads its kernel
  HostTensor cublasC(DType::F32, {n, n});
  KILN_TRY_VOID(device.copyToHost(cublasC.bytes().data(), dc.ptr(), bytes, stream));
  KILN_TRY_VOID(device.synchronize(stream));
  if (std::string check = checkSampled(n, inputs.at("a"), inputs.at("b"), cublasC); check != "ok") {
    result.check = "cuBLAS itself: " + check;
    return result;
  }
  double maxDifference = 0, maxMagnitude = 0;
  auto kv = kilnC.as<float>();
  auto cv = std::as_const(cublasC).as<float>();
  for (int64_t i = 0; i < n * n; ++i) {
    maxDifference = std::max(maxDifference, double(std::abs(kv[i] - cv[i])));
    maxMagnitude = std::max(maxMagnitude, double(std::abs(cv[i])));
  }
  result.relativeDifference = maxMagnitude > 0 ? maxDifference / maxMagnitude : maxDifference;
  if (!(result.relativeDifference <= kAgreement)) {
    result.check = fmt::format("kiln and cuBLAS differ by {:.3g} of the output's magnitude",
                               result.relativeDifference);
    return result;
  }

  int runs = context.quick ? kRunsQuick : kRuns;
  KILN_TRY(result.kiln, timeKernels(model, inputs, runs));
  std::vector<double> cublasMs;
  for (int run = 0; run < runs; ++run) {
    KILN_TRY(double ms, timeOnStream(device, stream, sgemm));
    cublasMs.push_back(ms);
  }
  result.cublasMedianMs = median(cublasMs);
  result.cublasMinMs = *std::min_element(cublasMs.begin(), cublasMs.end());
  return result;
}

} // namespace

void benchMatmul(BenchContext &context) {
  // 3001: odd, so no tile divides it (edge tiles and unaligned rows).
  std::vector<int64_t> sizes = context.quick ? std::vector<int64_t>{1024, 3001}
                                             : std::vector<int64_t>{1024, 2048, 4096, 3001};
  std::erase_if(sizes, [&](int64_t n) { return !context.selected(fmt::format("matmul_{}", n)); });
  if (sizes.empty())
    return;
  Goal goal{.name = "fp32 SIMT matmul vs cuBLAS SGEMM (every size)", .target = ">= 70%"};
  if (context.hostDevice) {
    std::string why = "--host-device has no GPU; cuBLAS needs one";
    fmt::print("== (c) fp32 matmul vs cuBLAS SGEMM: skipped: {}\n\n", why);
    goal.measured = "skipped: " + why;
    context.report.addGoal(std::move(goal));
    return;
  }
  auto stream = DeviceStream::create(*context.gpu.device);
  auto cublas = stream ? Cublas::open(stream->get())
                       : Expected<std::unique_ptr<Cublas>>(std::unexpected(stream.error()));
  if (!cublas) {
    context.report.addFailure(fmt::format("matmul: {}", cublas.error().message()));
    goal.measured = "cuBLAS unavailable: " + cublas.error().message();
    context.report.addGoal(std::move(goal));
    return;
  }
  int runs = context.quick ? kRunsQuick : kRuns;
  Table table{
      .title = "(c) fp32 matmul (CUDA cores, no tf32): kiln vs cuBLAS SGEMM",
      .columns = {"n (n x n x n)", "kiln ms", "cuBLAS ms", "kiln TFLOP/s", "cuBLAS TFLOP/s",
                  "kiln/cuBLAS", "goal", "max diff / max|c|", "check"},
      .note = fmt::format(
          "Medians of {} runs after one untimed run, each side timed with device events (kiln: "
          "the run profile's kernel events; cuBLAS ({}, CUBLAS_DEFAULT_MATH, row-major as "
          "C^T = B^T A^T): events around cublasSgemm_v2 on its own stream); same inputs, "
          "uploaded once per side. kiln/cuBLAS = cuBLAS time / kiln time. Checked before "
          "timing: {} sampled elements of each side against fp64 dot products, and kiln's "
          "whole output against cuBLAS's (max difference <= {:.0e} of the largest |c|).",
          runs, (*cublas)->libraryName(), kSamples, kAgreement)};
  double worst = -1;
  bool failed = false;
  for (int64_t n : sizes) {
    auto result = measureMatmul(context, **cublas, stream->get(), n);
    std::string name = fmt::format("{}", n);
    if (!result || result->check != "ok") {
      std::string why = result ? result->check : result.error().message();
      context.report.addFailure(fmt::format("matmul {}: {}", n, why));
      table.rows.push_back({name, "—", "—", "—", "—", "—", "—", "—",
                            result ? "MISMATCH" : "error"});
      failed = true;
      continue;
    }
    double flops = 2.0 * double(n) * double(n) * double(n);
    double ratio = result->cublasMedianMs / result->kiln.medianMs;
    worst = worst < 0 ? ratio : std::min(worst, ratio);
    table.rows.push_back(
        {name, fmt::format("{:.3f}", result->kiln.medianMs),
         fmt::format("{:.3f}", result->cublasMedianMs),
         fmt::format("{:.2f}", flops / (result->kiln.medianMs * 1e-3) / 1e12),
         fmt::format("{:.2f}", flops / (result->cublasMedianMs * 1e-3) / 1e12),
         fmt::format("{:.0f}%", ratio * 100), ratio >= kGoal ? "ok" : "MISSED",
         fmt::format("{:.2e}", result->relativeDifference), "ok"});
  }
  if (worst >= 0) {
    goal.measured = fmt::format("{:.0f}% (worst size){}", worst * 100,
                                failed ? "; some sizes failed" : "");
    goal.status = worst >= kGoal && !failed ? GoalStatus::Met : GoalStatus::Missed;
  } else {
    goal.measured = "failed (see Failures)";
  }
  context.report.addGoal(std::move(goal));
  context.report.addTable(std::move(table));
}

} // namespace kiln::bench
