// The bundle writer: lower once per target, compile the kernels (host object
// linked into a shared object, or PTX and cubin per architecture), build the
// launch plan, and encode it all with runtime/bundle.
#include "compiler/aot/AotBundle.h"

#include "codegen/llvm/HostBackend.h"
#include "compiler/GpuCompile.h"
#include "compiler/LaunchPlanBuilder.h"
#include "compiler/ParamSetCheck.h"
#include "compiler/Pipeline.h"
#include "compiler/SizeBucketCompile.h"
#include "compiler/aot/HostLinker.h"
#include "compiler/tuning/OfflineGpuTarget.h"
#include "compiler/tuning/TuningKeys.h"
#include "ir/graph/Specialize.h"
#include "runtime/bundle/BundleFile.h"
#include "runtime/tuning/TuningRecordJson.h"
#include "support/Elapsed.h"
#include "support/Version.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>

namespace kiln::compiler {
namespace {

using runtime::bundle::BundleContents;
using runtime::bundle::BundleTarget;

/// The plan builder wants an entry per kernel; a bundle stores names and the
/// loader binds the real code, so every step gets this stand-in.
void unboundKernel(void *const *) { KILN_UNREACHABLE("a bundle's plan step ran before loading"); }

Expected<runtime::LaunchPlan> planWithoutCode(const LoweredProgram &program,
                                              DerivedValues derived) {
  auto unbound = [](std::string_view) { return runtime::KernelEntry::host(&unboundKernel); };
  KILN_TRY(runtime::LaunchPlan plan, buildLaunchPlan(*program.graph, program.fusion,
                                                     program.groupKernels, unbound, derived));
  for (runtime::PlanStep &step : plan.steps)
    step.entry = {};
  return plan;
}

/// Keeps the records `program`'s lowering used, each key once.
void collectRecords(const LoweredProgram &program, AotReport &report) {
  for (const auto &record : program.groupRecords) {
    if (!record)
      continue;
    bool seen = false;
    for (const tuning::TuningRecord &kept : report.records)
      seen = seen || kept.key == record->key;
    if (!seen)
      report.records.push_back(*record);
  }
}

/// The tuning database's one-line account of a lowering for `label`.
void addTuningLine(const CompileReport &compileReport, std::string_view label, AotReport &report) {
  if (!compileReport.tuning.empty())
    report.tuning.push_back(fmt::format("{}: {}", label, compileReport.tuning));
}

/// Weights, when given, must be exactly the plan's parameters with their
/// dtypes and shapes: one error lists every missing, unknown and mistyped name.
Expected<void> checkWeights(const std::optional<NamedTensors> &weights,
                            const runtime::LaunchPlan &plan) {
  if (!weights)
    return {};
  std::vector<ExpectedParam> params;
  for (const runtime::PlanBinding &binding : plan.params) {
    const runtime::PlanBuffer &buffer = plan.buffers[static_cast<size_t>(binding.buffer)];
    params.push_back({binding.name, buffer.dtype, buffer.shape});
  }
  return checkParamSet(*weights, params, "the weights", "weight");
}

/// The CPU plans and kernels of `graph`: one program, or for a graph with a size symbol one
/// per size bucket (docs/dynamic-shapes.md), the whole range's first.
struct CpuPrograms {
  std::vector<LoweredProgram> programs;
  std::vector<int64_t> bounds; ///< per program, its symbol's bound (symbolic graphs only)
  std::vector<kir::Kernel> kernels;
};

Expected<CpuPrograms> lowerCpu(const ir::Graph &graph, const AotOptions &options,
                               const codegen::CpuTarget &target, CompileReport &compileReport) {
  std::ostringstream dump;
  LazyFingerprint fingerprint = tuning::targetFingerprint(target);
  CpuPrograms lowered;
  KILN_TRY(std::vector<int64_t> bounds, sizeBucketBounds(graph, options.compile.sizeBuckets));
  if (bounds.size() == 1) {
    KILN_TRY(LoweredProgram program,
             lowerProgram(graph, options.compile, target, fingerprint, dump, compileReport));
    lowered.kernels = program.kernels;
    lowered.programs.push_back(std::move(program));
    return lowered;
  }
  KILN_TRY(LoweredSizeBuckets buckets, lowerSizeBuckets(graph, bounds, options.compile, target,
                                                        fingerprint, dump, compileReport));
  for (LoweredSizeBuckets::Bucket &bucket : buckets.buckets) {
    lowered.bounds.push_back(bucket.bound);
    lowered.programs.push_back(std::move(bucket.program));
  }
  lowered.kernels = std::move(buckets.kernels);
  return lowered;
}

Expected<void> addCpuCode(const ir::Graph &graph, const AotOptions &options,
                          BundleContents &contents, AotReport &report) {
  codegen::CpuTarget target = options.cpuTarget.value_or(codegen::hostCpuTarget());
  CompileReport compileReport;
  KILN_TRY(CpuPrograms lowered, lowerCpu(graph, options, target, compileReport));
  for (const LoweredProgram &program : lowered.programs)
    collectRecords(program, report);
  addTuningLine(compileReport, "cpu", report);
  // The plans and the weights are checked before the (slower) code generation.
  for (size_t i = 0; i < lowered.programs.size(); ++i) {
    KILN_TRY(runtime::LaunchPlan plan, planWithoutCode(lowered.programs[i], DerivedValues::Kept));
    if (i == 0)
      contents.hostPlan = std::move(plan);
    else // smallest first
      contents.hostBuckets.insert(contents.hostBuckets.begin(),
                                  {{lowered.bounds[i]}, std::move(plan)});
  }
  KILN_TRY_VOID(checkWeights(options.weights, contents.hostPlan));
  KILN_TRY(std::string object, codegen::emitHostObject(lowered.kernels, target));
  KILN_TRY(contents.hostSharedObject, linkSharedObject(object));
  contents.meta.cpuTriple = target.triple;
  contents.meta.cpuName = target.cpuName;
  contents.meta.cpuFeatures = target.features;
  report.target = fmt::format("cpu {} {}", target.triple, target.cpuName);
  report.numKernels = static_cast<int>(lowered.kernels.size());
  report.sizeBuckets = compileReport.sizeBuckets;
  if (report.sizeBuckets.empty() && graph.isSymbolic()) {
    std::vector<std::string> symbols;
    for (const ir::SizeSymbol &symbol : graph.symbols())
      symbols.push_back(symbol.str());
    report.sizeBuckets = fmt::format("{}: 1 bucket, the whole range", fmt::join(symbols, ", "));
  }
  return {};
}

Expected<void> addGpuCode(const ir::Graph &graph, const AotOptions &options,
                          BundleContents &contents, AotReport &report) {
  if (options.gpuArchs.empty())
    return makeError(ErrorCode::InvalidArgument, "a cuda bundle needs at least one --arch");
  for (const std::string &arch : options.gpuArchs) {
    for (const auto &code : contents.gpu)
      if (code.arch == arch)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("architecture {} is listed twice", arch));
    KILN_TRY(codegen::GpuTarget named, codegen::gpuTargetNamed(arch));
    KILN_TRY(OfflineGpuTarget offline, offlineGpuTarget(named, options.compile));
    const codegen::GpuTarget &target = offline.target;
    if (!offline.tunedDevice.empty())
      report.notes.push_back(fmt::format("{}: schedules for the tuned {}", target.archName(),
                                         offline.tunedDevice));
    CompileReport compileReport;
    std::ostringstream dump;
    KILN_TRY(LoweredProgram program, lowerProgram(graph, options.compile, target,
                                                  offline.fingerprint, dump, compileReport));
    collectRecords(program, report);
    addTuningLine(compileReport, target.archName(), report);
    runtime::bundle::GpuArchCode code;
    KILN_TRY(code.plan, planWithoutCode(program, DerivedValues::PerRun));
    KILN_TRY_VOID(checkWeights(options.weights, code.plan));
    KILN_TRY(GpuModuleImage image,
             emitGpuCode(program.kernels, target, options.compile, dump, &compileReport));
    code.arch = target.archName();
    code.ptx = std::move(image.ptx);
    code.cubin.assign(reinterpret_cast<const char *>(image.cubin.data()), image.cubin.size());
    if (code.cubin.empty())
      report.notes.push_back(fmt::format("{}: PTX only (no cubin: ptxas unavailable); the "
                                         "driver compiles it at load",
                                         code.arch));
    std::map<std::string, runtime::LaunchDims, std::less<>> dimsByKernel;
    for (const kir::Kernel &kernel : program.kernels) {
      KILN_TRY(runtime::LaunchDims dims, launchDimsOf(kernel));
      dimsByKernel.emplace(kernel.name, dims);
    }
    for (const runtime::PlanStep &step : code.plan.steps)
      code.stepDims.push_back(step.kind == runtime::StepKind::Kernel
                                  ? dimsByKernel.at(step.kernelName)
                                  : runtime::LaunchDims{}); // a collective: not encoded
    if (contents.gpu.empty())
      report.numKernels = static_cast<int>(program.kernels.size());
    contents.meta.gpuArchs.push_back(code.arch);
    contents.gpu.push_back(std::move(code));
  }
  report.target = fmt::format("cuda {}", fmt::join(contents.meta.gpuArchs, ","));
  return {};
}

} // namespace

Expected<std::string> buildBundle(const ir::Graph &graph, const AotOptions &options,
                                  AotReport *report) {
  auto start = std::chrono::steady_clock::now();
  AotReport localReport;
  AotReport &r = report ? *report : localReport;
  r = {};
  KILN_TRY_VOID(ir::requireStaticParams(graph));
  BundleContents contents;
  contents.meta.kilnVersion = std::string(kilnVersion());
  contents.meta.model = graph.name();
  if (options.target == TargetKind::Cpu) {
    contents.meta.target = BundleTarget::Cpu;
    KILN_TRY_VOID(addCpuCode(graph, options, contents, r));
  } else if (options.target == TargetKind::Cuda) {
    contents.meta.target = BundleTarget::Cuda;
    KILN_TRY_VOID(addGpuCode(graph, options, contents, r));
  } else {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("a bundle's target is cpu or cuda, not {}",
                                 targetKindName(options.target)));
  }
  contents.weights = options.weights.value_or(NamedTensors{});
  if (!r.records.empty())
    contents.tuningRecords = tuning::tuningExportToJson({r.records, {}});
  std::string bytes = runtime::bundle::encodeBundle(contents);
  r.bytes = bytes.size();
  r.seconds = secondsSince(start);
  return bytes;
}

Expected<void> writeBundle(const ir::Graph &graph, const AotOptions &options,
                           const std::string &path, AotReport *report) {
  KILN_TRY(std::string bytes, buildBundle(graph, options, report));
  return runtime::bundle::writeBundleFile(path, bytes);
}

} // namespace kiln::compiler
