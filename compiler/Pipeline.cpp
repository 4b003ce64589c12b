// Graph passes, fusion and lowering: the part of a compile every target shares.
#include "compiler/Pipeline.h"

#include "compiler/tuning/RecordSource.h"

#include "ir/graph/Clone.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/Printer.h"
#include "passes/PassManager.h"
#include "passes/graph/GraphPasses.h"
#include "passes/lower/Lower.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <chrono>

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

/// Graph passes before fusion: clean up, decompose the composite ops that have
/// no kernel template of their own (attention becomes matmuls and a softmax),
/// split concats wider than a kernel's input bound into trees, apply the
/// precision policy to every contraction, those matmuls included, on a GPU
/// with tensor cores for the policy's operands run the convolutions that then
/// suit them as NHWC (`layout`) and, under fp8, give matmuls K-contiguous
/// operands (`kmajor`), on the CPU run convolutions as NHWC (`layout-cpu`) and
/// the deep f32 3x3 ones as Winograd (`winograd`), and clean up again (`fold` narrows
/// cast constants, `cse` merges casts and transposes, `simplify` cancels transpose pairs).
Expected<void> runGraphPasses(ir::Graph &graph, const CompileOptions &options,
                              const LoweringTarget &target) {
  passes::PassManager pm;
  pm.setVerifyEach(options.verifyEach);
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  pm.add(passes::createDecomposePass(passes::opsWithoutKernels()));
  pm.add(passes::createSplitWideConcatPass());
  if (options.precision != passes::PrecisionPolicy::Fp32)
    pm.add(passes::createPrecisionPass(options.precision));
  bool fp8 = options.precision == passes::PrecisionPolicy::Fp8;
  // e4m3 products need sm_89; the 16-bit and tf32 ones sm_80.
  int tensorCoreSm = fp8 ? kir::mmaShapeInfo(kir::MmaKind::E4M3_M16N8K32).minSm : 80;
  if (lower::gpuComputeCapability(target) >= tensorCoreSm &&
      options.precision != passes::PrecisionPolicy::Fp32) {
    pm.add(passes::createNhwcLayoutPass());
    if (fp8)
      pm.add(passes::createKMajorOperandsPass());
  }
  // The CPU runs convolutions as NHWC, where its direct kernel reads a tap's channels
  // contiguously, and the f32 3x3 ones with many channels, in either layout, as Winograd
  // (docs/winograd.md).
  bool cpu = std::holds_alternative<codegen::CpuTarget>(target);
  if (cpu && options.cpuNhwc)
    pm.add(passes::createNhwcLayoutPass(passes::NhwcConvolutions::Chained));
  if (cpu && options.precision == passes::PrecisionPolicy::Fp32 && options.winograd)
    pm.add(passes::createWinogradPass());
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  KILN_TRY_VOID(pm.run(graph));
  return {};
}

/// The key on one line (a signature has a line per node).
std::string describeKey(const tuning::TuningKey &key) {
  std::string signature = key.signature;
  while (!signature.empty() && signature.back() == '\n')
    signature.pop_back();
  for (size_t at = signature.find('\n'); at != std::string::npos; at = signature.find('\n', at))
    signature.replace(at, 1, "; ");
  return fmt::format("signature '{}', shapes {}, target '{}', kiln {}", signature, key.shapes,
                     key.target, key.kilnVersion);
}

/// One group lowered with what the tuning database says: the record's schedule
/// when it has a usable one, else the default (with a warning when the record
/// was unusable). Replay turns a missing or unusable record into an error.
struct RecordLowering {
  const ir::Graph &graph;
  const LoweringTarget &target;
  const RecordSource &records;
  CompileReport &report;
  bool verifyKernels;

  struct Result {
    lower::LoweredKernel kernel;
    lower::Schedule schedule;
    bool fromRecord = false;
  };

  Expected<Result> withDefault(const passes::FusionGroup &group) {
    lower::Schedule schedule = lower::defaultSchedule(graph, group, target);
    KILN_TRY(lower::LoweredKernel kernel,
             lower::lowerGroupAndRunKernelPasses(graph, group, schedule, target, verifyKernels));
    return Result{std::move(kernel), std::move(schedule), false};
  }

  Expected<Result> lower(const passes::FusionGroup &group,
                         std::optional<tuning::TuningRecord> &usedRecord) {
    tuning::GroupIdentity identity = tuning::groupIdentity(graph, group);
    KILN_TRY(std::optional<tuning::TuningRecord> record, records.find(identity));
    bool replay = records.mode() == TuningMode::Replay;
    std::string where = fmt::format("group {} ({})", group.id, identity.summary);
    if (!record) {
      if (replay && lower::scheduleSpace(graph, group, target).size() > 1)
        return std::unexpected(
            Error(ErrorCode::NotFound, fmt::format("tuning replay: {} has no tuning record in {}",
                                                   where, records.path()))
                .withNote("key: " + describeKey(records.keyFor(identity)))
                .withNote("tune this model first (kiln tune), or compile with --tuning use"));
      return withDefault(group);
    }
    usedRecord = record;
    if (record->backend != "kiln") {
      report.tuningRecords.push_back(
          fmt::format("{}: {} record '{}' (kiln lowers it with the default schedule)", where,
                      record->backend, record->schedule));
      return withDefault(group);
    }
    // A record is data from a file: it is checked like any input, never trusted.
    auto unusable = [&](const std::string &why) -> Expected<Result> {
      std::string message =
          fmt::format("tuning record for {} in {} not used: {}", where, records.path(), why);
      if (replay)
        return makeError(ErrorCode::InvalidArgument, "tuning replay: " + message);
      report.warnings.push_back(message + "; using the default schedule");
      usedRecord.reset();
      return withDefault(group);
    };
    Expected<lower::Schedule> schedule = lower::parseSchedule(record->schedule);
    if (!schedule)
      return unusable(schedule.error().message());
    Expected<lower::LoweredKernel> lowered =
        lower::lowerGroupAndRunKernelPasses(graph, group, *schedule, target, verifyKernels);
    if (!lowered)
      return unusable(fmt::format("lowering rejects its schedule '{}': {}", record->schedule,
                                  lowered.error().message()));
    std::string speedup = record->bestSeconds > 0 && record->defaultSeconds > 0
                              ? fmt::format(", {:.2f}x over the default",
                                            record->defaultSeconds / record->bestSeconds)
                              : std::string();
    report.tuningRecords.push_back(
        fmt::format("{}: {}{}, tuned {}", where, record->schedule, speedup, record->tunedAt));
    return Result{std::move(*lowered), std::move(*schedule), true};
  }
};

} // namespace

Expected<LoweredProgram> lowerProgram(const ir::Graph &userGraph, const CompileOptions &options,
                                      const LoweringTarget &target,
                                      const LazyFingerprint &targetFingerprint, std::ostream &dump,
                                      CompileReport &report) {
  auto start = Clock::now();
  LoweredProgram program;
  KILN_TRY_VOID(ir::verifyGraph(userGraph));
  KILN_TRY(program.graph, ir::cloneGraph(userGraph));
  ir::Graph &graph = *program.graph;
  KILN_TRY_VOID(runGraphPasses(graph, options, target));
  if (options.dump & kDumpGraph)
    dump << "// ---- graph after graph passes (precision: "
         << passes::precisionPolicyName(options.precision) << ")\n"
         << ir::printGraph(graph);
  report.graphPassSeconds = secondsSince(start);

  auto lowerStart = Clock::now();
  KILN_TRY(program.fusion, passes::planFusion(graph));
  report.numGroups = static_cast<int>(program.fusion.groups.size());
  if (options.fusedGraphDot)
    report.fusedGraphDot = passes::fusionPlanToDot(graph, program.fusion);
  program.groupKernels.resize(program.fusion.groups.size());
  program.groupRecords.resize(program.fusion.groups.size());
  KILN_TRY(RecordSource records, RecordSource::open(options, targetFingerprint));
  RecordLowering recordLowering{graph, target, records, report, options.verifyKernels};
  int kernelGroups = 0, fromRecords = 0;
  std::string scheduleListing;
  for (size_t g = 0; g < program.fusion.groups.size(); ++g) {
    const passes::FusionGroup &group = program.fusion.groups[g];
    if (!passes::needsKernel(group))
      continue;
    ++kernelGroups;
    std::optional<lower::Schedule> chosen;
    if (options.chooseSchedule)
      chosen = options.chooseSchedule(graph, group);
    RecordLowering::Result result;
    if (chosen) {
      KILN_TRY(result.kernel, lower::lowerGroupAndRunKernelPasses(graph, group, *chosen, target,
                                                                  options.verifyKernels));
      result.schedule = *chosen;
    } else if (records.active()) {
      KILN_TRY(result, recordLowering.lower(group, program.groupRecords[g]));
    } else {
      KILN_TRY(result, recordLowering.withDefault(group));
    }
    fromRecords += result.fromRecord ? 1 : 0;
    scheduleListing +=
        fmt::format("//   group {} schedule: {}{}\n", group.id, lower::scheduleStr(result.schedule),
                    result.fromRecord ? " (tuning record)" : "");
    lower::LoweredKernel lowered = std::move(result.kernel);
    if (lowered.prelude) {
      program.kernels.push_back(*lowered.prelude);
      ++report.numPreludeKernels;
    }
    program.kernels.push_back(lowered.kernel);
    for (const kir::Kernel &followUp : lowered.followUps)
      program.kernels.push_back(followUp);
    program.groupKernels[g] = std::move(lowered);
  }
  report.numKernels = static_cast<int>(program.kernels.size());
  report.tuning = records.active() ? fmt::format("{} of {} groups from {}", fromRecords,
                                                 kernelGroups, records.path())
                                   : records.inactiveReason();
  if (options.dump & kDumpFused)
    dump << "// ---- fusion groups\n"
         << passes::printFusionPlan(graph, program.fusion) << scheduleListing;
  if (options.dump & kDumpKernel)
    for (const kir::Kernel &kernel : program.kernels)
      dump << "// ---- kernel " << kernel.name << "\n" << kir::printKernel(kernel);
  report.loweringSeconds = secondsSince(lowerStart);
  return program;
}

} // namespace kiln::compiler
