// The cuda target: architecture choice, code generation (through the kernel
// cache), module loading and the launch plan of driver kernels.
#include "compiler/CudaCompile.h"

#include "compiler/GpuCompile.h"
#include "compiler/LaunchPlanBuilder.h"
#include "compiler/GpuModuleCache.h"
#include "compiler/Pipeline.h"
#include "compiler/tuning/CudnnCandidate.h"
#include "compiler/tuning/TuningKeys.h"
#include "runtime/DeviceExecutor.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cudnn/CudnnConv2D.h"
#include "runtime/cudnn/CudnnLibrary.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <chrono>
#include <map>

namespace kiln::compiler {

namespace {

/// The newest architecture kiln generates code for; newer GPUs run its PTX
/// through the driver's compiler.
constexpr int kNewestSm = 90;

} // namespace

Expected<codegen::GpuTarget> gpuTargetFor(const runtime::cuda::CudaDeviceProperties &device,
                                          const std::string &requestedArch) {
  int deviceSm = device.ccMajor * 10 + device.ccMinor;
  std::string arch = requestedArch;
  if (arch.empty()) {
    if (deviceSm < 80)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("GPU {} is sm_{}; kiln generates code for sm_80 and newer",
                                   device.name, deviceSm));
    // The "a" variant on an exact sm_90 part; plain sm_90 PTX on anything newer.
    arch = deviceSm == 90 ? "sm_90a"
           : deviceSm > kNewestSm ? fmt::format("sm_{}", kNewestSm)
                                  : fmt::format("sm_{}", deviceSm);
  }
  auto named = codegen::gpuTargetNamed(arch);
  if (!named && requestedArch.empty()) // an sm_8x part without a table (sm_87): an older one's
    named = codegen::gpuTargetNamed(deviceSm >= 89 ? "sm_89" : deviceSm >= 86 ? "sm_86" : "sm_80");
  KILN_TRY(codegen::GpuTarget target, std::move(named));
  // PTX runs on its architecture and newer ones; "a" code only on its own.
  bool runs = target.archSpecific ? target.sm == deviceSm : target.sm <= deviceSm;
  if (!runs)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernels for {} cannot run on GPU {} (sm_{})", target.archName(),
                                 device.name, deviceSm));
  // The schedules size grids by the real part's SMs and L2.
  if (target.sm == deviceSm) {
    target.numSms = device.numSms;
    target.l2Bytes = device.l2Bytes;
  }
  return target;
}

namespace {

/// Groups whose tuning record chose cuDNN run its kernel in place of kiln's
/// (docs/cudnn.md): the same step, the same arguments (the group's inputs,
/// then its output; any workspaces and follow-up kernels of kiln's are dropped). A record
/// cuDNN cannot honour here (no library, a choice it refuses) falls back to
/// kiln's kernel, lowered with the default schedule, and the report says so.
Expected<void> useLibraryRecords(
    LoweredProgram &program, runtime::cuda::CudaDevice &device,
    std::map<std::string, std::shared_ptr<const runtime::DeviceKernel>, std::less<>> &kernels,
    CompileReport &report) {
  for (size_t i = 0; i < program.groupRecords.size(); ++i) {
    const std::optional<tuning::TuningRecord> &record = program.groupRecords[i];
    if (!record || record->backend != "cudnn" || !program.groupKernels[i])
      continue;
    const passes::FusionGroup &group = program.fusion.groups[i];
    const std::string &kernelName = program.groupKernels[i]->kernel.name;
    auto fallBack = [&](const std::string &why) {
      report.warnings.push_back(fmt::format("group {} ({}): its cuDNN record is not used: {}; "
                                            "kiln's kernel runs instead",
                                            group.id, kernelName, why));
    };
    auto spec = tuning::cudnnConvSpecFor(*program.graph, group);
    if (const std::string *why = std::get_if<std::string>(&spec)) {
      fallBack(*why);
      continue;
    }
    auto choice = runtime::cudnn::parseCudnnChoice(record->schedule);
    if (!choice) {
      fallBack(choice.error().message());
      continue;
    }
    runtime::cudnn::CudnnConvOptions cudnnOptions;
    cudnnOptions.fixed = *choice;
    cudnnOptions.name = kernelName + "_cudnn";
    auto kernel = tuning::makeCudnnKernel(std::get<tuning::CudnnConvSpec>(spec), device,
                                          cudnnOptions);
    if (!kernel) {
      fallBack(kernel.error().message());
      continue;
    }
    kernels[kernelName] = std::move(*kernel);
    program.groupKernels[i]->followUps.clear(); // cuDNN writes the finished output itself
  }
  return {};
}

} // namespace

Expected<CompiledModel> compileForCuda(const ir::Graph &graph, const CompileOptions &options,
                                       const DeviceHandle<runtime::cuda::CudaDevice> &gpu,
                                       std::ostream &dump, CompileReport &report) {
  const runtime::cuda::CudaDeviceProperties &device = gpu.device->properties();
  KILN_TRY(codegen::GpuTarget target, gpuTargetFor(device, options.gpuArch));
  report.target = fmt::format("cuda {} on {} ({})", target.archName(), gpu.device->describe(),
                              options.gpuBackend == GpuBackend::Nvrtc ? "CUDA C through NVRTC"
                                                                      : "LLVM NVPTX");
  auto fingerprint = LazyFingerprint::deferred(
      [target, device] { return deviceGpuFingerprint(target, device); });
  KILN_TRY(LoweredProgram program,
           lowerProgram(graph, options, target, fingerprint, dump, report));

  auto codegenStart = std::chrono::steady_clock::now();
  KILN_TRY(GpuModuleImage image, emitGpuCode(program.kernels, target, options, dump, &report));
  runtime::cuda::ModuleImage module{std::move(image.ptx), std::move(image.cubin),
                                    fmt::format("{} kernels for {}", program.kernels.size(),
                                                target.archName())};
  // A cubin runs only on its own major architecture: elsewhere the driver compiles the PTX.
  int deviceSm = device.ccMajor * 10 + device.ccMinor;
  if (target.sm / 10 != deviceSm / 10 || target.sm > deviceSm)
    module.cubin.clear();

  std::map<std::string, std::shared_ptr<const runtime::DeviceKernel>, std::less<>> kernels;
  std::shared_ptr<runtime::cuda::CudaModule> loaded;
  if (!program.kernels.empty()) {
    KILN_TRY(loaded, gpu.device->loadModule(module));
    for (const kir::Kernel &kernel : program.kernels) {
      KILN_TRY(runtime::LaunchDims dims, launchDimsOf(kernel));
      KILN_TRY(std::shared_ptr<const runtime::DeviceKernel> entry,
               loaded->kernel(kernel.name, dims));
      kernels.emplace(kernel.name, std::move(entry));
    }
  }
  KILN_TRY_VOID(useLibraryRecords(program, *gpu.device, kernels, report));
  report.codegenSeconds = secondsSince(codegenStart);

  auto lookup = [&](std::string_view name) {
    auto it = kernels.find(name);
    return it == kernels.end() ? runtime::KernelEntry{}
                               : runtime::KernelEntry::device(it->second);
  };
  KILN_TRY(runtime::LaunchPlan plan,
           buildLaunchPlan(*program.graph, program.fusion, program.groupKernels, lookup,
                           compiler::DerivedValues::PerRun));
  KILN_TRY(std::unique_ptr<runtime::DeviceExecutor> executor,
           runtime::DeviceExecutor::create(plan, gpu.device, gpu.pool));
  return CompiledModel(std::move(plan), std::shared_ptr<const void>(loaded), std::move(executor));
}

std::string deviceGpuFingerprint(const codegen::GpuTarget &target,
                                 const runtime::cuda::CudaDeviceProperties &device) {
  return tuning::targetFingerprint(target, {std::to_string(device.driverVersion),
                                            gpuToolkitVersion(),
                                            runtime::cudnn::cudnnVersionText()});
}

} // namespace kiln::compiler
