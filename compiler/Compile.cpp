// The compile pipeline, as straight-line code: each stage is one call, and
// each can print what it produced.
#include "compiler/Compile.h"

#include "codegen/llvm/HostBackend.h"
#include "compiler/CudaCompile.h"
#include "compiler/Devices.h"
#include "compiler/GpuCompile.h"
#include "compiler/HostModuleCache.h"
#include "compiler/LaunchPlanBuilder.h"
#include "compiler/Pipeline.h"
#include "compiler/SizeBucketCompile.h"
#include "compiler/tuning/TuningKeys.h"
#include "ir/graph/Clone.h"
#include "ir/graph/Specialize.h"
#include "runtime/DeviceExecutor.h"
#include "runtime/sim/SimDevice.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

std::string describeTarget(const codegen::CpuTarget &target) {
  return fmt::format("cpu {} {} ({}-bit vectors, {} threads)", target.triple, target.cpuName,
                     target.vectorBits, target.cores);
}

/// The CPU's kernels: one host module, each step calling its entry point.
Expected<CompiledModel> finishForCpu(compiler::LoweredProgram &program,
                                     const codegen::CpuTarget &target,
                                     const CompileOptions &options, std::ostream &dump,
                                     CompileReport &r) {
  auto codegenStart = Clock::now();
  if (options.dump & kDumpLlvm)
    for (const kir::Kernel &kernel : program.kernels) {
      KILN_TRY(std::string llvmIr, codegen::emitHostLlvmIr(kernel, target, /*optimized=*/true));
      dump << "// ---- LLVM IR of " << kernel.name << "\n" << llvmIr;
    }
  KILN_TRY(std::shared_ptr<codegen::HostModule> module,
           compiler::hostModuleFor(program.kernels, target, options, r));
  r.codegenSeconds = secondsSince(codegenStart);

  auto lookup = [&](std::string_view name) {
    auto fn = reinterpret_cast<runtime::CpuKernelFn>(module->lookup(name));
    return runtime::KernelEntry::host(fn);
  };
  KILN_TRY(runtime::LaunchPlan plan,
           compiler::buildLaunchPlan(*program.graph, program.fusion, program.groupKernels, lookup,
                                     compiler::DerivedValues::Kept));
  return CompiledModel(std::move(plan), std::shared_ptr<const void>(module));
}

/// One program (no size buckets) compiled for the CPU.
Expected<CompiledModel> compileForCpu(const ir::Graph &graph, const CompileOptions &options,
                                      const codegen::CpuTarget &target,
                                      const compiler::LazyFingerprint &fingerprint,
                                      std::ostream &dump, CompileReport &r) {
  KILN_TRY(compiler::LoweredProgram program,
           compiler::lowerProgram(graph, options, target, fingerprint, dump, r));
  return finishForCpu(program, target, options, dump, r);
}

/// Makes `model` (compiled from `graph` with `options`) compile again, for wider size ranges,
/// a run whose sizes are outside its range: the graph's symbols widened, the same options but
/// the dumps, and no recompiler of its own (`model` widens further when a run needs it).
Expected<void> addSizeRecompiler(CompiledModel &model, const ir::Graph &graph,
                                 const CompileOptions &options) {
  KILN_TRY(std::unique_ptr<ir::Graph> owned, ir::cloneGraph(graph));
  std::shared_ptr<const ir::Graph> copy(std::move(owned));
  CompileOptions again = options;
  again.dump = 0;
  again.dumpStream = nullptr;
  again.fusedGraphDot = false;
  again.recompileOutOfRange = false;
  SizeRecompiler recompiler =
      [copy, again](std::span<const ir::SizeSymbol> ranges) -> Expected<CompiledModel> {
    KILN_TRY(std::unique_ptr<ir::Graph> widened, ir::widenSymbols(*copy, ranges));
    return compile(*widened, again);
  };
  return model.setSizeRecompiler(std::move(recompiler),
                                 options.recompileLog ? options.recompileLog : &std::cerr);
}

/// The simulator's kernels: the simulator is the device, each launch
/// interprets the kernel's IR, and the device executor runs the plan.
Expected<CompiledModel> finishForSim(compiler::LoweredProgram &program) {
  compiler::DeviceHandle<sim::SimDevice> sim = compiler::simDevice();
  std::map<std::string, std::shared_ptr<const runtime::DeviceKernel>, std::less<>> kernels;
  for (const kir::Kernel &kernel : program.kernels)
    kernels.emplace(kernel.name, sim.device->loadKernel(kernel));
  auto lookup = [&](std::string_view name) {
    auto it = kernels.find(name);
    return it == kernels.end() ? runtime::KernelEntry{}
                               : runtime::KernelEntry::device(it->second);
  };
  KILN_TRY(runtime::LaunchPlan plan,
           compiler::buildLaunchPlan(*program.graph, program.fusion, program.groupKernels, lookup,
                                     compiler::DerivedValues::PerRun));
  KILN_TRY(std::unique_ptr<runtime::DeviceExecutor> executor,
           runtime::DeviceExecutor::create(plan, sim.device, sim.pool));
  return CompiledModel(std::move(plan), nullptr, std::move(executor));
}

} // namespace

std::string_view targetKindName(TargetKind kind) {
  switch (kind) {
  case TargetKind::Cpu: return "cpu";
  case TargetKind::Sim: return "sim";
  case TargetKind::Cuda: return "cuda";
  case TargetKind::Auto: return "auto";
  }
  return "?";
}

Expected<TargetKind> parseTargetKind(std::string_view name) {
  for (TargetKind kind : {TargetKind::Cpu, TargetKind::Sim, TargetKind::Cuda, TargetKind::Auto})
    if (targetKindName(kind) == name)
      return kind;
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("unknown target '{}': expected cpu, sim, cuda or auto", name));
}

std::string_view tuningModeName(TuningMode mode) {
  switch (mode) {
  case TuningMode::Off: return "off";
  case TuningMode::Use: return "use";
  case TuningMode::Replay: return "replay";
  }
  return "?";
}

Expected<TuningMode> parseTuningMode(std::string_view name) {
  for (TuningMode mode : {TuningMode::Off, TuningMode::Use, TuningMode::Replay})
    if (tuningModeName(mode) == name)
      return mode;
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("unknown tuning mode '{}': expected off, use or replay", name));
}

Expected<TuningMode> tuningModeFromEnvironment() {
  const char *value = std::getenv("KILN_TUNING");
  if (value == nullptr || *value == '\0')
    return TuningMode::Use;
  Expected<TuningMode> mode = parseTuningMode(value);
  if (!mode)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("$KILN_TUNING is '{}': expected off, use or replay (or unset)",
                                 value));
  return mode;
}

TuningMode defaultTuningMode() { return tuningModeFromEnvironment().value_or(TuningMode::Use); }

Expected<TargetChoice> chooseTarget(const CompileOptions &options) {
  if (options.target == TargetKind::Sim) {
    KILN_TRY(codegen::GpuTarget gpu, codegen::gpuTargetNamed(
                                      options.gpuArch.empty() ? kDefaultGpuArch : options.gpuArch));
    // Simulated timings say nothing about a real GPU: sim records are their own target.
    return TargetChoice{TargetKind::Sim, gpu, std::nullopt, "", compiler::simGpuFingerprint(gpu)};
  }
  std::string fallbackReason;
  if (options.target == TargetKind::Cuda || options.target == TargetKind::Auto) {
    // A GPU is usable when the driver opens one kiln can generate code for.
    auto gpu = compiler::cudaDevice();
    Expected<codegen::GpuTarget> gpuTarget =
        gpu ? compiler::gpuTargetFor(gpu->device->properties(), options.gpuArch)
            : std::unexpected(gpu.error());
    if (gpuTarget) {
      auto fingerprint = compiler::LazyFingerprint::deferred(
          [target = *gpuTarget, device = gpu->device->properties()] {
            return compiler::deviceGpuFingerprint(target, device);
          });
      return TargetChoice{TargetKind::Cuda, *gpuTarget, *gpu, "", std::move(fingerprint)};
    }
    if (options.target == TargetKind::Cuda) {
      Error error(ErrorCode::Unavailable,
                  fmt::format("cannot run on a GPU: {}", gpuTarget.error().message()));
      for (const std::string &note : gpuTarget.error().notes())
        error.withNote(note);
      return std::unexpected(std::move(error).withNote(
          "run with --target cpu, or --target sim for the GPU kernels on the SIMT simulator; "
          "`kiln compile --target cuda` generates GPU code without a GPU"));
    }
    fallbackReason =
        fmt::format("no usable GPU ({}); running on the CPU", gpuTarget.error().message());
  }
  codegen::CpuTarget cpu = codegen::hostCpuTarget();
  return TargetChoice{TargetKind::Cpu, cpu, std::nullopt, std::move(fallbackReason),
                      tuning::targetFingerprint(cpu)};
}

Expected<CompiledModel> compile(const ir::Graph &userGraph, const CompileOptions &options,
                                CompileReport *report) {
  auto start = Clock::now();
  std::ostream &dump = options.dumpStream ? *options.dumpStream : std::cerr;
  CompileReport localReport;
  CompileReport &r = report ? *report : localReport;
  r = {};

  KILN_TRY(TargetChoice choice, chooseTarget(options));
  r.fallbackReason = choice.fallbackReason;
  KILN_TRY_VOID(ir::requireStaticParams(userGraph));
  // A recompiled model reads the first one's bound parameters in place: host models only.
  if (options.recompileOutOfRange && userGraph.isSymbolic() && choice.kind != TargetKind::Cpu)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("recompileOutOfRange takes the cpu target so far, not {} "
                                 "(docs/dynamic-shapes.md)",
                                 targetKindName(choice.kind)));

  if (choice.kind == TargetKind::Cuda) {
    KILN_TRY(CompiledModel model,
             compiler::compileForCuda(userGraph, options, *choice.cudaDevice, dump, r));
    r.totalSeconds = secondsSince(start);
    return model;
  }

  if (choice.kind == TargetKind::Sim) {
    const auto &gpu = std::get<codegen::GpuTarget>(choice.target);
    r.target = fmt::format("sim {} (SIMT simulator)", gpu.archName());
    KILN_TRY(compiler::LoweredProgram program,
             compiler::lowerProgram(userGraph, options, gpu, choice.fingerprint, dump, r));
    // The simulator runs kernel IR; PTX is made only when a dump asks for it.
    if (options.dump & (kDumpLlvm | kDumpPtx | kDumpCuda)) {
      auto codegenStart = Clock::now();
      KILN_TRY(compiler::GpuModuleImage image,
               compiler::emitGpuCode(program.kernels, gpu, options, dump, &r));
      r.codegenSeconds = secondsSince(codegenStart);
    }
    KILN_TRY(CompiledModel model, finishForSim(program));
    r.totalSeconds = secondsSince(start);
    return model;
  }

  if (options.dump & (kDumpPtx | kDumpCuda))
    return makeError(ErrorCode::InvalidArgument,
                     "the ptx and cuda dumps show GPU code: compile with the cuda or sim target");
  const auto &target = std::get<codegen::CpuTarget>(choice.target);
  r.target = describeTarget(target);
  KILN_TRY(std::vector<int64_t> bucketBounds,
           compiler::sizeBucketBounds(userGraph, options.sizeBuckets));
  Expected<CompiledModel> compiled =
      bucketBounds.size() > 1
          ? compiler::compileSizeBuckets(userGraph, bucketBounds, options, target,
                                         choice.fingerprint, dump, r)
          : compileForCpu(userGraph, options, target, choice.fingerprint, dump, r);
  KILN_TRY(CompiledModel model, std::move(compiled));
  if (options.recompileOutOfRange && userGraph.isSymbolic())
    KILN_TRY_VOID(addSizeRecompiler(model, userGraph, options));
  r.totalSeconds = secondsSince(start);
  return model;
}

} // namespace kiln
