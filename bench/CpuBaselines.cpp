#include "bench/CpuBaselines.h"

#include "bench/CpuTiming.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <immintrin.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef KILN_BENCH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace kiln::bench {
namespace {

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  return "unknown";
}

// The peak loops: kAccumulators independent FMA chains per thread, enough to cover the FMA
// latency on both FMA pipes of every current x86 core, so the loop runs at the FMA throughput.
constexpr int kAccumulators = 12;
constexpr int64_t kPeakIterations = 20'000'000;

__attribute__((target("avx512f"))) float fmaLoopAvx512(int64_t iterations) {
  __m512 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  float sum = 0;
  for (int i = 0; i < kAccumulators; ++i)
    sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

__attribute__((target("avx2,fma"))) float fmaLoopAvx2(int64_t iterations) {
  __m256 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float lane : lanes)
      sum += lane;
  }
  return sum;
}

/// The fp32 FMA throughput of `threads` threads running the widest loop the CPU has, in
/// GFLOP/s (an FMA counts two), and that ISA's name.
std::pair<double, std::string> measurePeak(int threads) {
  bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma"))
    return {0, "no FMA"};
  const int lanes = avx512 ? 16 : 8;
  std::atomic<float> sink{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      sink = sink + (avx512 ? fmaLoopAvx512(kPeakIterations) : fmaLoopAvx2(kPeakIterations));
    });
  for (std::thread &worker : workers)
    worker.join();
  double seconds = secondsSince(start);
  double flops = 2.0 * lanes * kAccumulators * static_cast<double>(kPeakIterations) * threads;
  return {flops / seconds / 1e9, avx512 ? "AVX-512 (512-bit FMA)" : "AVX2 + FMA (256-bit FMA)"};
}

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? fmt::format("{}={}", name, value) : fmt::format("{} unset", name);
}

/// Times `run` and prints its record, checking `output` after the last run.
void timeAndPrint(std::string_view impl, std::string_view workload, double flops,
                  const std::function<Expected<void>()> &run, const HostTensor &output,
                  const OutputCheck &check) {
  auto seconds = timeCpuRuns(run);
  if (!seconds)
    return printError(impl, workload, seconds.error().message());
  printTime(impl, workload, std::move(*seconds), flops, check ? check(output) : "not checked");
}

#ifdef KILN_BENCH_ONEDNN
using Tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

dnnl::memory userMemory(const dnnl::engine &engine, dnnl::memory::dims dims, Tag tag,
                        const HostTensor &tensor) {
  return dnnl::memory({dims, kF32, tag}, engine,
                      const_cast<float *>(tensor.as<float>().data()));
}
#endif

} // namespace

void printBaselineInfo(int threads) {
  auto [peak, isa] = measurePeak(threads);
  std::string openblas = "missing (install libopenblas-dev and rebuild)";
#ifdef KILN_BENCH_OPENBLAS
  openblas_set_num_threads(threads);
  openblas = fmt::format("kernel {}, {}, {} threads", openblas_get_corename(),
                         openblas_get_config(), openblas_get_num_threads());
#endif
  std::string onednn = "missing (install libdnnl-dev and rebuild)";
#ifdef KILN_BENCH_ONEDNN
  const dnnl_version_t *version = dnnl_version();
  onednn = fmt::format("{}.{}.{} ({}), {}", version->major, version->minor, version->patch,
                       version->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other runtime",
                       environment("OMP_NUM_THREADS"));
#endif
  printLine(fmt::format(R"({{"kind": "info", "impl": "baselines", "cpu": {}, "isa": {}, )"
                        R"("peak_gflops": {:.1f}, "peak_threads": {}, "openblas": {}, )"
                        R"("onednn": {}, "openblas_env": {}}})",
                        jsonString(cpuModel()), jsonString(isa), peak, threads,
                        jsonString(openblas), jsonString(onednn),
                        jsonString(environment("OPENBLAS_CORETYPE") + ", " +
                                   environment("OPENBLAS_L2_SIZE"))));
}

void benchMatmulBaselines(std::string_view workload, const HostTensor &a, const HostTensor &b,
                          double flops, const OutputCheck &check) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  HostTensor c(DType::F32, {m, n});
#ifdef KILN_BENCH_OPENBLAS
  timeAndPrint(
      "openblas", workload, flops,
      [&]() -> Expected<void> {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                    static_cast<int>(n), static_cast<int>(k), 1.0f, a.as<float>().data(),
                    static_cast<int>(k), b.as<float>().data(), static_cast<int>(n), 0.0f,
                    c.as<float>().data(), static_cast<int>(n));
        return {};
      },
      c, check);
#endif
#ifdef KILN_BENCH_ONEDNN
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory aMemory = userMemory(engine, {m, k}, Tag::ab, a);
  dnnl::memory bMemory = userMemory(engine, {k, n}, Tag::ab, b);
  dnnl::memory cMemory = userMemory(engine, {m, n}, Tag::ab, c);
  dnnl::matmul::primitive_desc desc(
      dnnl::matmul::desc(aMemory.get_desc(), bMemory.get_desc(), cMemory.get_desc()), engine);
  dnnl::matmul product(desc);
  timeAndPrint(
      "onednn", workload, flops,
      [&]() -> Expected<void> {
        product.execute(stream, {{DNNL_ARG_SRC, aMemory},
                                 {DNNL_ARG_WEIGHTS, bMemory},
                                 {DNNL_ARG_DST, cMemory}});
        stream.wait();
        return {};
      },
      c, check);
#else
  (void)workload, (void)flops, (void)check, (void)c;
#endif
}

void benchConvBaselines(std::string_view workload, const ConvProblem &p, const HostTensor &x,
                        const HostTensor &w, double flops, const OutputCheck &check) {
#ifdef KILN_BENCH_ONEDNN
  const int64_t out = p.outSize();
  HostTensor y(DType::F32, {p.batch, p.outChannels, out, out});
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory::dims xDims{p.batch, p.inChannels, p.size, p.size},
      wDims{p.outChannels, p.inChannels, p.kernel, p.kernel},
      yDims{p.batch, p.outChannels, out, out};
  // format_tag::any: oneDNN picks its layouts (blocked by 8 or 16 channels) and its algorithm.
  dnnl::convolution_forward::primitive_desc desc(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto,
          {xDims, kF32, Tag::any}, {wDims, kF32, Tag::any}, {yDims, kF32, Tag::any},
          {p.stride, p.stride}, {p.pad, p.pad}, {p.pad, p.pad}),
      engine);
  dnnl::convolution_forward conv(desc);
  dnnl::memory xUser = userMemory(engine, xDims, Tag::nchw, x);
  dnnl::memory wUser = userMemory(engine, wDims, Tag::oihw, w);
  dnnl::memory yUser = userMemory(engine, yDims, Tag::nchw, y);
  dnnl::memory xOwn(desc.src_desc(), engine), wOwn(desc.weights_desc(), engine),
      yOwn(desc.dst_desc(), engine);
  dnnl::reorder xIn(xUser, xOwn), wIn(wUser, wOwn), yOut(yOwn, yUser);
  auto reorders = [&]() -> Expected<void> {
    xIn.execute(stream, xUser, xOwn);
    wIn.execute(stream, wUser, wOwn);
    return {};
  };
  auto convolve = [&]() -> Expected<void> {
    conv.execute(stream,
                 {{DNNL_ARG_SRC, xOwn}, {DNNL_ARG_WEIGHTS, wOwn}, {DNNL_ARG_DST, yOwn}});
    stream.wait();
    return {};
  };
  // The reorders first, once, so that the timed convolution reads real operands; its output is
  // checked after one more reorder back to NCHW.
  (void)reorders();
  stream.wait();
  auto seconds = timeCpuRuns(convolve);
  if (!seconds)
    return printError("onednn", workload, seconds.error().message());
  yOut.execute(stream, yOwn, yUser);
  stream.wait();
  printTime("onednn", workload, std::move(*seconds), flops, check(y),
            fmt::format("{} {}", desc.impl_info_str(), "(layouts of its own choosing)"));
  auto reorderSeconds = timeCpuRuns([&]() -> Expected<void> {
    KILN_TRY_VOID(reorders());
    yOut.execute(stream, yOwn, yUser);
    stream.wait();
    return {};
  });
  if (!reorderSeconds)
    return printError("onednn_reorders", workload, reorderSeconds.error().message());
  printTime("onednn_reorders", workload, std::move(*reorderSeconds), 0, check(y));
#else
  (void)workload, (void)p, (void)x, (void)w, (void)flops, (void)check;
#endif
}

} // namespace kiln::bench
