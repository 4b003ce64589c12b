// kiln_gpu_bench: kiln's GPU kernels against the GPU's own yardsticks — the
// device-to-device copy bandwidth, cuBLAS SGEMM and GemmEx, cuDNN — and the cost of a launch.
// Prints a table per section and writes bench/results/gpu-<date>-<commit>.md.
#include "RunInfo.h"
#include "bench/gpu/BenchDevice.h"
#include "bench/gpu/Sections.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace {

using namespace kiln;
using namespace kiln::bench;

/// ctest's and the round trip's "skipped" status: no GPU here.
constexpr int kExitNoGpu = 77;

constexpr const char *kUsage = R"(usage: kiln_gpu_bench [options]

Measures kiln's GPU kernels on GPU 0 and writes a Markdown report:
  (a) copy         device-to-device copy bandwidth, 16 MiB to 1 GiB
  (b) rows         pointwise chains, softmax, layer_norm vs the copy bandwidth
  (c) matmul       fp32 SIMT matmul vs cuBLAS SGEMM
  (d) launch       launch overhead per kernel, with and without launch graphs
  (e) tensorcores  tensor-core GEMMs (bf16, f16, tf32) vs cuBLAS GemmEx: n^3
                   at 4096 and 8192, GPT-2 small and large projections at 512
                   and 8192 tokens
  (f) conv         conv2d vs cuDNN 9 (fp32 NCHW, bf16 NHWC, and bf16 NHWC on
                   wgmma forced) on ResNet-50 (batch 32) and VGG16 (batch 8)
                   layers; skipped when cuDNN
                   is not found (KILN_CUDNN names libcudnn.so.9 or its folder)
options:
  --quick           fewer sizes and runs (a smoke test, not a result)
  --filter LIST     only workloads whose name contains one of LIST's comma-
                    separated texts (copy always runs: section (b) needs it),
                    e.g. softmax, matmul_4096, launch, tc_bf16 (section (e)'s
                    bf16 rows, forced wgmma and tma included), tc_f16_n4096,
                    conv_bf16 (section (f)'s bf16 rows, forced wgmma included),
                    tc_bf16_n8192,conv_bf16
  --sections LIST   comma-separated subset of
                    copy,rows,matmul,launch,tensorcores,conv, run in that
                    order (rows after copy); the report is rewritten after
                    every table, so a run stopped early keeps what finished
  --out DIR         where the report goes (default: bench/results)
  --backend B       llvm (default) or nvrtc: how kiln compiles its kernels
  --host-device     run every section on a stand-in in host memory with kiln's
                    CPU target: a self-test of the benchmark without a GPU,
                    whose figures mean nothing (the report says so)
  --commit SHA      the commit to name in the report (default: $KILN_BENCH_COMMIT,
                    else git rev-parse --short HEAD, else "unknown")
exit status: 0 every check passed (goals may be missed), 1 a check or section
failed, 2 bad usage, 77 no GPU (the reason is printed)
)";

std::string currentCommit(const std::string &given) {
  if (!given.empty())
    return given;
  if (const char *fromEnv = std::getenv("KILN_BENCH_COMMIT"); fromEnv && *fromEnv)
    return fromEnv;
  std::string commit = bench::commandOutput("git rev-parse --short HEAD 2>/dev/null");
  if (commit.empty())
    return "unknown";
  if (!bench::commandOutput("git status --porcelain --untracked-files=no 2>/dev/null").empty())
    commit += "-dirty";
  return commit;
}

std::string utcNow(const char *format) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof text, format, &utc);
  return text;
}

/// `dir`/gpu-<date>-<commit>.md, with -2, -3, ... when a run of the same day
/// and commit already wrote one.
std::filesystem::path reportPath(const std::string &dir, const std::string &date,
                                 const std::string &commit) {
  std::filesystem::path path = std::filesystem::path(dir) / fmt::format("gpu-{}-{}.md", date, commit);
  for (int n = 2; std::filesystem::exists(path); ++n)
    path = std::filesystem::path(dir) / fmt::format("gpu-{}-{}-{}.md", date, commit, n);
  return path;
}

} // namespace

int main(int argc, char **argv) {
  BenchContext context;
  const std::string allSections = "copy,rows,matmul,launch,tensorcores,conv";
  std::string sections = allSections, outDir = "bench/results", backend = "llvm",
              commitArg;
  bool hostDevice = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool hasValue = i + 1 < argc;
    if (arg == "--quick") {
      context.quick = true;
    } else if (arg == "--filter" && hasValue) {
      context.filter = argv[++i];
    } else if (arg == "--sections" && hasValue) {
      sections = argv[++i];
    } else if (arg == "--out" && hasValue) {
      outDir = argv[++i];
    } else if (arg == "--backend" && hasValue) {
      backend = argv[++i];
    } else if (arg == "--host-device") {
      hostDevice = true;
    } else if (arg == "--commit" && hasValue) {
      commitArg = argv[++i];
    } else {
      std::fputs(kUsage, arg == "--help" ? stdout : stderr);
      return arg == "--help" ? 0 : 2;
    }
  }
  if (backend != "llvm" && backend != "nvrtc") {
    fmt::print(stderr, "kiln_gpu_bench: --backend must be llvm or nvrtc, got '{}'\n", backend);
    return 2;
  }
  auto listed = [](const std::string &list, std::string_view name) {
    return fmt::format(",{},", list).find(fmt::format(",{},", name)) != std::string::npos;
  };
  // The sections run in the order listed (what matters most first: a section stopped from
  // outside loses only itself and those after it); rows needs copy's bandwidth before it.
  std::vector<std::string> order;
  for (size_t start = 0; start <= sections.size();) {
    size_t end = std::min(sections.find(',', start), sections.size());
    std::string name = sections.substr(start, end - start);
    if (!listed(allSections, name)) {
      fmt::print(stderr, "kiln_gpu_bench: unknown section '{}' in --sections (known: {})\n", name,
                 allSections);
      return 2;
    }
    if (name == "rows" && !std::ranges::count(order, "copy"))
      order.push_back("copy");
    if (!std::ranges::count(order, name))
      order.push_back(name);
    start = end + 1;
  }

  context.hostDevice = hostDevice;
  if (hostDevice) {
    context.gpu = openHostBenchDevice();
    context.compileOptions.target = TargetKind::Cpu;
  } else {
    auto gpu = openBenchDevice(0);
    if (!gpu) {
      fmt::print("kiln_gpu_bench: no GPU: {}\n", gpu.error().message());
      return kExitNoGpu;
    }
    context.gpu = std::move(*gpu);
    context.compileOptions.target = TargetKind::Cuda;
    context.compileOptions.gpuArch = context.gpu.gpuArch();
  }
  context.compileOptions.gpuBackend = backend == "nvrtc" ? GpuBackend::Nvrtc : GpuBackend::Llvm;
  // fp32 means fp32 on both sides of section (c): a tf32 cuBLAS would be a
  // different contest. (Section (e) asks for tf32 by its compute type.)
  bool tf32Override = std::getenv("NVIDIA_TF32_OVERRIDE") != nullptr;
  unsetenv("NVIDIA_TF32_OVERRIDE");

  std::string commit = currentCommit(commitArg);
  std::string date = utcNow("%Y-%m-%d");
  fmt::print("kiln_gpu_bench: {} (driver {}), kiln {} for {} ({} backend){}\n\n",
             context.gpu.description, context.gpu.driverVersion, commit,
             context.compileOptions.gpuArch, backend, context.quick ? ", quick" : "");

  auto started = std::chrono::steady_clock::now();
  std::error_code error;
  std::filesystem::create_directories(outDir, error);
  const std::filesystem::path path = reportPath(outDir, date, commit);
  // The file is rewritten after every table (finished = false says so in it) and once more at
  // the end; each write goes to a file beside it first, then replaces it whole.
  auto writeReport = [&](bool finished) {
    double seconds = secondsSince(started);
    std::vector<std::string> header = {
        fmt::format("device: {}", context.gpu.description),
        fmt::format("compute capability: {}.{}, {} SMs", context.gpu.ccMajor,
                    context.gpu.ccMinor, context.gpu.numSms),
        fmt::format("CUDA driver: {}", context.gpu.driverVersion),
        fmt::format("date: {}", utcNow("%Y-%m-%d %H:%M UTC")),
        hostDevice ? fmt::format("kiln: commit {}, release build, target cpu", commit)
                   : fmt::format("kiln: commit {}, release build, target cuda {} with the {} "
                                 "backend",
                                 commit, context.compileOptions.gpuArch, backend),
        fmt::format("run: kiln_gpu_bench{}{}{}, {:.0f} s", context.quick ? " --quick" : "",
                    sections == allSections ? "" : " --sections " + sections,
                    context.filter.empty() ? "" : " --filter " + context.filter, seconds),
    };
    if (!finished)
      header.push_back("**unfinished**: written after the last table below; the run had not "
                       "ended (stopped from outside, or still running)");
    if (tf32Override)
      header.push_back("NVIDIA_TF32_OVERRIDE was set and was cleared: cuBLAS computed as each "
                       "section asks (SGEMM in fp32, GemmEx's tf32 rows in tf32)");
    if (hostDevice)
      header.push_back("--host-device: a self-test on a host-memory stand-in with kiln's CPU "
                       "target; these figures say nothing about a GPU");
    if (context.quick)
      header.push_back("--quick: fewer sizes and runs; a smoke test, not a result to quote");
    std::filesystem::path partial = path;
    partial += ".partial";
    {
      std::ofstream out(partial);
      out << context.report.markdown(fmt::format("kiln GPU benchmarks, {}", date), header);
      out.close();
      if (!out)
        return false;
    }
    std::filesystem::rename(partial, path, error);
    return !error;
  };
  context.report.onChange([&] { writeReport(false); });

  const std::map<std::string, void (*)(BenchContext &)> run = {
      {"copy", benchCopyBandwidth},   {"rows", benchRowKernels},
      {"matmul", benchMatmul},        {"launch", benchLaunchOverhead},
      {"tensorcores", benchTensorCoreMatmul}, {"conv", benchConvVsCudnn}};
  for (const std::string &name : order)
    run.at(name)(context);

  context.report.onChange({});
  if (!writeReport(true)) {
    fmt::print(stderr, "kiln_gpu_bench: cannot write {}\n", path.string());
    return 1;
  }
  fmt::print("written to {}\n", path.string());
  return context.report.failed() ? 1 : 0;
}
