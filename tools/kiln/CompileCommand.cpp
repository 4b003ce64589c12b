// kiln compile: runs the pipeline on a model and reports what it produced.
#include "examples/models/ExampleRegistry.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "runtime/cache/AtomicFile.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <optional>

namespace kiln::tool {

namespace {

constexpr const char *kCompileHelp = R"(usage: kiln compile <model> [options]

Compiles a model and prints a summary: target, fusion groups, kernels, compile
time per stage and planned memory.

<model> is a graph IR file (.kir), an ONNX model (.onnx; --shape NAME=D0,D1,...
fixes each input dim it leaves open) or example:<name>; the examples are:
{}
options:
{}{}  --dump=LIST         print intermediate forms to stdout, a comma-separated
                      subset of: graph (after graph passes), fused (groups and
                      schedules), kernel (kernel IR), llvm (optimized LLVM IR),
                      ptx (the PTX module) and cuda (the CUDA C source) for cuda
  --dot FILE          write a Graphviz picture of the fused graph to FILE
  --verify-kernels    run the kernel-IR verifier on every lowered kernel and
                      after every kernel pass (default: on in debug builds,
                      off in release; $KILN_VERIFY_KERNEL_IR=1/0 sets it)
  --batch N           batch size of an example (default: the example's)
  --help              print this help and exit
)";

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20))
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024)
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

} // namespace

const char *const kTargetHelp =
    R"(  --target T          where the model runs: cpu, sim (GPU kernels on the SIMT
                      simulator), cuda (GPU 0 through the CUDA driver) or auto
                      (default: the GPU when there is one, else the CPU)
  --arch sm_XX        GPU architecture for sim and cuda: sm_80, sm_86, sm_89,
                      sm_90 or sm_90a (default: the GPU's own; sm_90a for sim
                      and for GPU code compiled without a GPU)
  --backend B         GPU backend for cuda: llvm (NVPTX, default) or nvrtc (CUDA C)
  --precision P       how contractions compute: fp32 (default), tf32, bf16-mixed,
                      fp16-mixed or fp8 (docs/precision.md)
)";

Expected<void> parseTargetOptions(const Args &args, CompileOptions &options) {
  KILN_TRY(options.target, parseTargetKind(args.value("--target").value_or("auto")));
  options.gpuArch = args.value("--arch").value_or("");
  if (!options.gpuArch.empty()) {
    auto known = codegen::gpuTargetNamed(options.gpuArch);
    if (!known)
      return std::unexpected(known.error());
  }
  KILN_TRY(options.precision,
           passes::parsePrecisionPolicy(args.value("--precision").value_or("fp32")));
  std::string backend = args.value("--backend").value_or("llvm");
  if (backend == "llvm")
    options.gpuBackend = GpuBackend::Llvm;
  else if (backend == "nvrtc")
    options.gpuBackend = GpuBackend::Nvrtc;
  else
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("--backend expects llvm or nvrtc, got '{}'", backend));
  return {};
}

const char *const kTuningHelp =
    R"(  --tuning MODE       tuning records: use (default: a group with a record for
                      this target and kiln gets the record's schedule), replay
                      (every tunable group must have a record: a reproducible
                      build) or off (heuristic schedules); $KILN_TUNING sets the
                      default (docs/tuning.md)
  --tuning-db PATH    the tuning database (default: $KILN_TUNING_DB, else
                      tuning.sqlite in the kernel cache directory)
  --tuned-on TEXT     GPU code made without a GPU uses the records of the one
                      device of its architecture that the database holds;
                      TEXT, a piece of a device's fingerprint (sms=114,
                      driver=13000), picks one when there are several
)";

const char *const kWarpgroupHelp =
    R"(  --wgmma             sim or cuda on sm_90a: run every matmul and conv2d that
                      can on warpgroup products (wgmma), not yet the default
                      (docs/gpu-tensor-cores.md); overrides tuning records
  --tma               as --wgmma, the operands of each GEMM whose operands are
                      plain strided tensors arriving by bulk tensor copies
                      from a producer warpgroup (TMA)
  --persistent        as --tma, each such GEMM whose K is not split on a
                      persistent grid: a block an SM slot, walking the tiles
)";

Expected<void> parseTuningOptions(const Args &args, CompileOptions &options) {
  if (auto mode = args.value("--tuning")) {
    KILN_TRY(options.tuning, parseTuningMode(*mode));
  }
  if (auto path = args.value("--tuning-db")) {
    if (path->empty())
      return makeError(ErrorCode::InvalidArgument, "--tuning-db needs a path");
    options.tuningDbPath = *path;
  }
  if (auto device = args.value("--tuned-on")) {
    if (device->empty())
      return makeError(ErrorCode::InvalidArgument, "--tuned-on needs a piece of a fingerprint");
    options.gpuTuningDevice = *device;
  }
  if (args.has("--wgmma") || args.has("--tma") || args.has("--persistent")) {
    const bool persistent = args.has("--persistent");
    const bool tma = persistent || args.has("--tma");
    const char *flag = persistent ? "--persistent" : tma ? "--tma" : "--wgmma";
    std::string arch = options.gpuArch.empty() ? std::string(kDefaultGpuArch) : options.gpuArch;
    if (options.target != TargetKind::Sim && options.target != TargetKind::Cuda)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} needs --target sim or --target cuda (GPU kernels)", flag));
    if (arch != "sm_90a")
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("{} needs sm_90a, the one architecture with wgmma; the "
                                   "architecture is {}",
                                   flag, arch));
    codegen::GpuTarget target = *codegen::gpuTargetNamed(arch);
    options.chooseSchedule = [target, tma, persistent](const ir::Graph &,
                                                       const passes::FusionGroup &group) {
      std::optional<lower::Schedule> chosen = lower::wgmmaContractionSchedule(group, target, tma);
      auto *gemm = chosen ? std::get_if<lower::GpuMatMulSchedule>(&*chosen) : nullptr;
      if (persistent && gemm && gemm->tma && gemm->splitK == 1)
        gemm->persistent = true;
      return chosen;
    };
  }
  return {};
}

void printTuningReport(const CompileReport &report, std::string_view label) {
  if (report.tuning.empty())
    return;
  fmt::print("{}{}\n", label, report.tuning);
  for (const std::string &line : report.tuningRecords)
    fmt::print("  {}\n", line);
}

Expected<unsigned> parseDump(const Args &args) {
  auto list = args.value("--dump");
  if (!list)
    return 0u;
  unsigned flags = 0;
  size_t start = 0;
  while (start <= list->size()) {
    size_t comma = list->find(',', start);
    std::string name = list->substr(start, comma == std::string::npos ? std::string::npos
                                                                       : comma - start);
    if (name == "graph")
      flags |= kDumpGraph;
    else if (name == "fused")
      flags |= kDumpFused;
    else if (name == "kernel")
      flags |= kDumpKernel;
    else if (name == "llvm")
      flags |= kDumpLlvm;
    else if (name == "ptx")
      flags |= kDumpPtx;
    else if (name == "cuda")
      flags |= kDumpCuda;
    else
      return makeError(
          ErrorCode::InvalidArgument,
          fmt::format("--dump: unknown form '{}' (graph, fused, kernel, llvm, ptx, cuda)", name));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return flags;
}

namespace {

void printTimes(const CompileReport &report) {
  fmt::print("target:  {}\n", report.target);
  if (!report.fallbackReason.empty())
    fmt::print("note:    {}\n", report.fallbackReason);
  fmt::print("groups:  {} ({} kernels{})\n", report.numGroups, report.numKernels,
             report.numPreludeKernels > 0
                 ? fmt::format(", {} of them packing a weight once", report.numPreludeKernels)
                 : "");
  fmt::print("compile: {:.3f} s (graph passes {:.3f}, lowering {:.3f}, codegen {:.3f})\n",
             report.totalSeconds, report.graphPassSeconds, report.loweringSeconds,
             report.codegenSeconds);
  if (!report.kernelCache.empty())
    fmt::print("cache:   {}\n", report.kernelCache);
  printTuningReport(report, "tuning:  ");
  for (const std::string &warning : report.warnings)
    fmt::print(stderr, "kiln compile: warning: {}\n", warning);
}

/// `--target cuda`: the kernels compiled for the GPU, without needing one;
/// `kiln run --target cuda` loads and runs them.
int compileForCuda(const ir::Graph &graph, const CompileOptions &options,
                   const std::optional<std::string> &dotPath) {
  CompileReport report;
  auto kernels = compileGpuKernels(graph, options, &report);
  if (!kernels)
    return reportError("compile", kernels.error());
  if (dotPath)
    if (auto written = runtime::replaceFile(*dotPath, report.fusedGraphDot, "Graphviz file");
        !written)
      return reportError("compile", written.error());
  printTimes(report);
  fmt::print("ptx:     {} bytes for {} (compiled only: `kiln run --target cuda` runs them)\n",
             kernels->ptx.size(), kernels->arch);
  return kExitOk;
}

} // namespace

int reportError(std::string_view command, const Error &error) {
  fmt::print(stderr, "kiln {}: error: {}\n", command, error.str());
  return kExitFailure;
}

int usageError(std::string_view command, std::string_view message) {
  fmt::print(stderr, "kiln {}: {}\n", command, message);
  return kExitUsage;
}

int usageErrorWithHelp(std::string_view command, std::string_view message) {
  fmt::print(stderr, "kiln {}: {}\nrun 'kiln {} --help' for usage\n", command, message, command);
  return kExitUsage;
}

std::optional<Args> parseCommandArgs(std::string_view command,
                                     const std::vector<std::string> &words,
                                     const std::set<std::string> &valueFlags,
                                     const std::set<std::string> &boolFlags,
                                     const std::set<std::string> &optionalValueFlags) {
  auto args = Args::parse(words, valueFlags, boolFlags, optionalValueFlags);
  if (!args) {
    usageErrorWithHelp(command, args.error().message());
    return std::nullopt;
  }
  return std::move(*args);
}

int compileCommand(const std::vector<std::string> &words) {
  std::set<std::string> valued = kTargetFlags;
  valued.insert(kTuningFlags.begin(), kTuningFlags.end());
  valued.insert({"--dump", "--dot", "--batch"});
  valued.insert("--shape");
  auto args = parseCommandArgs("compile", words, valued,
                               {"--help", "--wgmma", "--tma", "--persistent", "--verify-kernels"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kCompileHelp, exampleListing(), kTargetHelp,
               std::string(kTuningHelp) + kWarpgroupHelp);
    return kExitOk;
  }
  if (args->positional().size() != 1)
    return usageErrorWithHelp("compile",
                              fmt::format("expected one model, got {}", args->positional().size()));
  CompileOptions options;
  auto target = parseTargetOptions(*args, options);
  auto tuning = parseTuningOptions(*args, options);
  auto dump = parseDump(*args);
  auto batch = args->intValue("--batch", 0, 1);
  auto shapes = parseShapeFlags(*args);
  if (const Error *error = firstError(target, tuning, dump, batch, shapes))
    return usageError("compile", error->message());
  if (auto usable = checkModelSpec(args->positional()[0], *batch, *shapes); !usable)
    return usageError("compile", usable.error().message());
  auto model = loadModel(args->positional()[0], *batch, 0, *shapes);
  if (!model)
    return reportError("compile", model.error());
  options.dump = *dump;
  options.dumpStream = &std::cout;
  options.fusedGraphDot = args->has("--dot");
  if (args->has("--verify-kernels"))
    options.verifyKernels = true;
  CompileReport report;
  if (options.target == TargetKind::Cuda)
    return compileForCuda(*model->graph, options, args->value("--dot"));
  auto compiled = compile(*model->graph, options, &report);
  if (!compiled)
    return reportError(
        "compile", withSymbolicModelNote(compiled.error(), *model->graph, args->positional()[0]));

  if (auto dotPath = args->value("--dot")) {
    if (auto written = runtime::replaceFile(*dotPath, report.fusedGraphDot, "Graphviz file");
        !written)
      return reportError("compile", written.error());
  }

  MemoryStats memory = compiled->memoryStats();
  printTimes(report);
  fmt::print("memory:  arena {} planned vs {} unplanned; constants {}; derived from "
             "parameters {}\n",
             formatBytes(memory.arenaBytes), formatBytes(memory.unplannedBytes),
             formatBytes(memory.constantBytes), formatBytes(memory.derivedBytes));
  return kExitOk;
}

} // namespace kiln::tool
