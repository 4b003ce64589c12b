// The autotuner's search: the groups compile() makes, each group's default
// timed first, then its other candidates in the cost model's order until its
// share of the budget is spent; every candidate checked against the reference.
#include "compiler/tuner/Tuner.h"

#include "compiler/CudaCompile.h"
#include "compiler/Devices.h"
#include "compiler/GpuCompile.h"
#include "compiler/Pipeline.h"
#include "compiler/tuner/CostModel.h"
#include "compiler/tuning/CudnnCandidate.h"
#include "compiler/tuner/GroupProblem.h"
#include "compiler/tuner/KernelTimer.h"
#include "passes/lower/Lower.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cudnn/CudnnLibrary.h"
#include "runtime/sim/SimDevice.h"
#include "support/Elapsed.h"
#include "support/Median.h"
#include "support/Tolerance.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>

namespace kiln::tuning {

namespace {

using Clock = std::chrono::steady_clock;

/// What tuning on one target needs: where kernels are lowered for, and a
/// timer for a group's problem.
/// A library kernel the tuner times beside kiln's candidates.
struct LibraryCandidate {
  std::shared_ptr<const runtime::DeviceKernel> kernel;
  std::string configText; ///< the record's schedule text
  std::string backend;    ///< the record's backend ("cudnn")
};

struct TuningTarget {
  compiler::LoweringTarget lowering;
  std::string description;
  std::string fingerprint;
  std::function<Expected<std::unique_ptr<KernelTimer>>(const GroupProblem &)> makeTimer;
  /// A library's kernel for a group, as one more candidate (cuDNN on a CUDA
  /// device): nullopt where the library cannot compute the group; an error
  /// makes the candidate invalid, never the run. Unset for other targets.
  std::function<Expected<std::optional<LibraryCandidate>>(const ir::Graph &,
                                                          const passes::FusionGroup &)>
      library;
};

/// A GPU module's kernel that keeps its module loaded.
class ModuleKernel final : public runtime::DeviceKernel {
public:
  ModuleKernel(std::shared_ptr<runtime::cuda::CudaModule> module,
               std::shared_ptr<const runtime::DeviceKernel> kernel)
      : module_(std::move(module)), kernel_(std::move(kernel)) {}
  const std::string &name() const override { return kernel_->name(); }
  Expected<void> launch(const runtime::DevicePtr *args, runtime::Stream stream) const override {
    return kernel_->launch(args, stream);
  }
  Expected<void> prepare(runtime::Stream stream) const override {
    return kernel_->prepare(stream);
  }

private:
  std::shared_ptr<runtime::cuda::CudaModule> module_;
  std::shared_ptr<const runtime::DeviceKernel> kernel_;
};

Expected<TuningTarget> cpuTarget(const CompileOptions &options,
                                 const TunerOptions &tunerOptions) {
  codegen::CpuTarget cpu = codegen::hostCpuTarget();
  TuningTarget target;
  target.lowering = cpu;
  target.description = fmt::format("cpu {} {} ({}-bit vectors, {} threads)", cpu.triple,
                                   cpu.cpuName, cpu.vectorBits, cpu.cores);
  target.fingerprint = targetFingerprint(cpu);
  int64_t flush = tunerOptions.flushBytes;
  CompileOptions cacheOptions;
  cacheOptions.useKernelCache = options.useKernelCache;
  cacheOptions.kernelCacheDir = options.kernelCacheDir;
  target.makeTimer = [cpu, flush, cacheOptions](const GroupProblem &problem) {
    return makeCpuKernelTimer(cpu, problem, flush, cacheOptions);
  };
  return target;
}

Expected<TuningTarget> simTarget(const CompileOptions &options, const TunerOptions &tunerOptions) {
  KILN_TRY(codegen::GpuTarget gpu,
           codegen::gpuTargetNamed(options.gpuArch.empty() ? kDefaultGpuArch : options.gpuArch));
  TuningTarget target;
  target.lowering = gpu;
  target.description = fmt::format("sim {} (SIMT simulator)", gpu.archName());
  target.fingerprint = compiler::simGpuFingerprint(gpu);
  std::shared_ptr<sim::SimDevice> device = compiler::simDevice().device;
  int64_t flush = tunerOptions.flushBytes;
  target.makeTimer = [device, gpu, flush](const GroupProblem &problem) {
    DeviceKernelLoader loader = [device](const kir::Kernel &kernel)
        -> Expected<std::shared_ptr<const runtime::DeviceKernel>> {
      return device->loadKernel(kernel);
    };
    return makeDeviceKernelTimer(device, std::move(loader), problem, gpu.l2Bytes, flush);
  };
  return target;
}

Expected<TuningTarget> cudaTarget(const CompileOptions &options,
                                  const TunerOptions &tunerOptions) {
  KILN_TRY(auto gpu, compiler::cudaDevice());
  const runtime::cuda::CudaDeviceProperties &properties = gpu.device->properties();
  KILN_TRY(codegen::GpuTarget arch, compiler::gpuTargetFor(properties, options.gpuArch));
  TuningTarget target;
  target.lowering = arch;
  target.description = fmt::format("cuda {} on {}", arch.archName(), gpu.device->describe());
  target.fingerprint = compiler::deviceGpuFingerprint(arch, properties);
  int deviceSm = properties.ccMajor * 10 + properties.ccMinor;
  std::shared_ptr<runtime::cuda::CudaDevice> device = gpu.device;
  int64_t flush = tunerOptions.flushBytes;
  CompileOptions codegenOptions = options;
  codegenOptions.dump = 0;
  target.makeTimer = [device, arch, flush, codegenOptions, deviceSm](const GroupProblem &problem) {
    DeviceKernelLoader loader = [device, arch, codegenOptions, deviceSm](const kir::Kernel &kernel)
        -> Expected<std::shared_ptr<const runtime::DeviceKernel>> {
      std::ostringstream sink;
      KILN_TRY(compiler::GpuModuleImage image,
               compiler::emitGpuCode({kernel}, arch, codegenOptions, sink));
      runtime::cuda::ModuleImage module{std::move(image.ptx), std::move(image.cubin),
                                        "tuning candidate " + kernel.name};
      if (arch.sm / 10 != deviceSm / 10 || arch.sm > deviceSm)
        module.cubin.clear();
      KILN_TRY(std::shared_ptr<runtime::cuda::CudaModule> loaded, device->loadModule(module));
      KILN_TRY(runtime::LaunchDims dims, compiler::launchDimsOf(kernel));
      KILN_TRY(std::shared_ptr<const runtime::DeviceKernel> entry, loaded->kernel(kernel.name, dims));
      return std::shared_ptr<const runtime::DeviceKernel>(
          std::make_shared<ModuleKernel>(std::move(loaded), std::move(entry)));
    };
    return makeDeviceKernelTimer(device, std::move(loader), problem, arch.l2Bytes, flush);
  };
  // cuDNN for the conv2d groups it computes exactly (docs/cudnn.md); it picks
  // its own algorithm by measuring, and wins only when it measures faster.
  target.library = [device](const ir::Graph &graph, const passes::FusionGroup &group)
      -> Expected<std::optional<LibraryCandidate>> {
    auto spec = cudnnConvSpecFor(graph, group);
    if (std::holds_alternative<std::string>(spec))
      return std::nullopt;
    KILN_TRY(auto kernel, makeCudnnKernel(std::get<CudnnConvSpec>(spec), *device));
    std::string config = kernel->configText();
    return LibraryCandidate{std::move(kernel), std::move(config), "cudnn"};
  };
  return target;
}

Expected<TuningTarget> tuningTargetFor(const CompileOptions &options,
                                       const TunerOptions &tunerOptions) {
  switch (options.target) {
  case TargetKind::Sim: return simTarget(options, tunerOptions);
  case TargetKind::Cuda: return cudaTarget(options, tunerOptions);
  case TargetKind::Cpu:
  case TargetKind::Auto: return cpuTarget(options, tunerOptions);
  }
  return makeError(ErrorCode::InvalidArgument, "unknown target kind");
}

/// One group being tuned.
struct GroupTuning {
  const passes::FusionGroup *group = nullptr;
  std::vector<lower::Schedule> space;
  std::vector<size_t> order; ///< indices into `space` to try after the default
  size_t tried = 0;          ///< how many of `order` have been timed
  GroupProblem problem;
  std::unique_ptr<KernelTimer> timer;
  TunedGroup result;
  double weight = 0;
};

class TuningRun {
public:
  TuningRun(const ir::Graph &graph, const TuningTarget &target, const TunerOptions &options)
      : graph_(graph), target_(target), options_(options) {
    threads_ = options.compileThreads > 0
                   ? options.compileThreads
                   : std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()), 1, 4);
  }

  int timed() const { return timed_; }

  /// Lowers, loads, checks and times `indices` of the group's space, loading
  /// them concurrently where the timer allows and timing one at a time.
  void runBatch(GroupTuning &tuning, const std::vector<size_t> &indices, int groupIndex,
                int groupCount, int planned) {
    std::vector<Expected<std::unique_ptr<LoadedCandidate>>> loaded;
    for (size_t i = 0; i < indices.size(); ++i)
      loaded.emplace_back(std::unexpected(Error(ErrorCode::Unavailable, "not loaded")));
    auto prepare = [&](size_t i) {
      auto lowered = lower::lowerGroupAndRunKernelPasses(graph_, *tuning.group,
                                                         tuning.space[indices[i]], target_.lowering);
      if (!lowered) {
        loaded[i] = std::unexpected(std::move(lowered).error());
        return;
      }
      loaded[i] = tuning.timer->load(*lowered);
    };
    if (tuning.timer->concurrentLoads() && indices.size() > 1) {
      std::vector<std::thread> workers;
      for (size_t i = 0; i < indices.size(); ++i)
        workers.emplace_back(prepare, i);
      for (std::thread &worker : workers)
        worker.join();
    } else {
      for (size_t i = 0; i < indices.size(); ++i)
        prepare(i);
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      const lower::Schedule &schedule = tuning.space[indices[i]];
      CandidateTiming timing;
      timing.schedule = lower::scheduleStr(schedule);
      if (!loaded[i]) {
        timing.valid = false;
        timing.note = "failed to compile: " + loaded[i].error().message();
      } else {
        measure(tuning, schedule, **loaded[i], timing);
      }
      loaded[i] = std::unexpected(Error(ErrorCode::Unavailable, "released"));
      tuning.result.candidates.push_back(std::move(timing));
      tuning.result.schedules.push_back(schedule);
      tuning.result.spaceIndices.push_back(static_cast<int>(indices[i]));
      ++timed_;
      report(TuneProgress::Kind::CandidateDone, tuning, groupIndex, groupCount, planned);
    }
  }

  /// Times the target's library kernel for the group, when it has one.
  void runLibrary(GroupTuning &tuning, int groupIndex, int groupCount, int planned) {
    if (!target_.library)
      return;
    Expected<std::optional<LibraryCandidate>> library = target_.library(graph_, *tuning.group);
    if (library && !*library)
      return;
    CandidateTiming timing;
    timing.backend = library ? (*library)->backend : "library";
    if (!library) {
      timing.schedule = "unavailable";
      timing.valid = false;
      timing.note = "library kernel unavailable: " + library.error().message();
    } else {
      timing.schedule = (*library)->configText;
      Expected<std::unique_ptr<LoadedCandidate>> loaded =
          tuning.timer->loadLibrary(std::move((*library)->kernel));
      if (!loaded) {
        timing.valid = false;
        timing.note = "failed to load: " + loaded.error().message();
      } else {
        measure(tuning, lower::NoSchedule{}, **loaded, timing);
      }
    }
    tuning.result.candidates.push_back(std::move(timing));
    tuning.result.schedules.push_back(lower::NoSchedule{});
    tuning.result.spaceIndices.push_back(-1);
    ++timed_;
    report(TuneProgress::Kind::CandidateDone, tuning, groupIndex, groupCount, planned);
  }

  void report(TuneProgress::Kind kind, const GroupTuning &tuning, int groupIndex, int groupCount,
              int planned) const {
    if (!options_.progress)
      return;
    TuneProgress event;
    event.kind = kind;
    event.groupIndex = groupIndex;
    event.groupCount = groupCount;
    event.groupSummary = tuning.result.identity.summary;
    event.candidatesDone = static_cast<int>(tuning.result.candidates.size());
    event.candidatesPlanned = planned;
    for (const CandidateTiming &c : tuning.result.candidates)
      if (c.valid && c.runs > 0 && (event.bestSeconds == 0 || c.medianSeconds < event.bestSeconds))
        event.bestSeconds = c.medianSeconds;
    options_.progress(event);
  }

  int threads() const { return threads_; }

private:
  void measure(GroupTuning &tuning, const lower::Schedule &schedule, LoadedCandidate &candidate,
               CandidateTiming &timing) {
    Expected<HostTensor> output = tuning.timer->runForCheck(candidate);
    if (!output) {
      timing.valid = false;
      timing.note = "failed to run: " + output.error().message();
      return;
    }
    if (options_.onCheckedOutput)
      options_.onCheckedOutput(schedule, *output);
    const HostTensor &expected = tuning.problem.expected;
    Comparison comparison =
        compareTensors(*output, expected, toleranceFor(expected.dtype()));
    if (!comparison.ok) {
      timing.valid = false;
      timing.note = fmt::format("output differs from the reference: {} mismatches, {}",
                                comparison.mismatches, comparison.firstMismatchStr);
      return;
    }
    Expected<std::vector<double>> seconds = tuning.timer->time(
        candidate, std::max(0, options_.warmupRuns), std::max(1, options_.timedRuns));
    if (!seconds) {
      timing.valid = false;
      timing.note = "failed to run: " + seconds.error().message();
      return;
    }
    timing.runs = static_cast<int>(seconds->size());
    timing.medianSeconds = median(*seconds);
    timing.minSeconds = *std::min_element(seconds->begin(), seconds->end());
  }

  const ir::Graph &graph_;
  const TuningTarget &target_;
  const TunerOptions &options_;
  int threads_ = 1;
  int timed_ = 0;
};

/// The fastest valid candidate (the earlier on a tie, so the default wins ties).
int fastestValid(const TunedGroup &group) {
  int best = -1;
  for (size_t i = 0; i < group.candidates.size(); ++i) {
    const CandidateTiming &c = group.candidates[i];
    if (!c.valid || c.runs == 0)
      continue;
    if (best < 0 || c.medianSeconds < group.candidates[size_t(best)].medianSeconds)
      best = static_cast<int>(i);
  }
  return best;
}

std::string nowUtc() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

} // namespace

Expected<TuneReport> tuneGraph(const ir::Graph &graph, const CompileOptions &options,
                               const TunerOptions &tunerOptions) {
  auto start = Clock::now();
  KILN_TRY(TuningTarget target, tuningTargetFor(options, tunerOptions));

  // The groups exactly as compile() makes them: its graph passes and fusion.
  CompileOptions lowerOptions = options;
  lowerOptions.chooseSchedule = nullptr;
  // Tuning starts from the heuristic defaults, whatever the database holds.
  lowerOptions.tuning = TuningMode::Off;
  lowerOptions.dump = 0;
  lowerOptions.fusedGraphDot = false;
  std::ostringstream noDump;
  CompileReport compileReport;
  KILN_TRY(compiler::LoweredProgram program,
           compiler::lowerProgram(graph, lowerOptions, target.lowering, target.fingerprint,
                                  noDump, compileReport));
  const ir::Graph &tunedGraph = *program.graph;

  TuneReport report;
  report.target = target.description;
  report.targetFingerprint = target.fingerprint;
  std::vector<GroupTuning> tunings;
  for (const passes::FusionGroup &group : program.fusion.groups) {
    if (!passes::needsKernel(group))
      continue;
    std::vector<lower::Schedule> space = lower::scheduleSpace(tunedGraph, group, target.lowering);
    if (space.size() < 2)
      continue;
    GroupTuning tuning;
    tuning.group = &group;
    tuning.result.groupId = group.id;
    tuning.result.identity = groupIdentity(tunedGraph, group);
    tuning.result.kind = std::string(passes::groupKindName(group.kind));
    tuning.result.defaultSchedule = lower::scheduleStr(space.front());
    tuning.result.spaceSize = static_cast<int>(space.size());
    // The space's first schedule is the heuristic default; the rest go in the
    // cost model's order, the families taking turns.
    tuning.order = searchOrder(space, rankByCost(tunedGraph, group, space, target.lowering));
    tuning.space = std::move(space);
    tunings.push_back(std::move(tuning));
  }

  TuningRun run(tunedGraph, target, tunerOptions);
  int groupCount = static_cast<int>(tunings.size());

  // First every group's default: the baseline, and the weight of the group's
  // share of the budget. Where no trial count limits the run, the cost
  // model's first picks are compiled beside it on the other compile threads,
  // which costs no more wall time than the default alone.
  bool exhaustive = tunerOptions.exhaustive;
  for (int g = 0; g < groupCount; ++g) {
    GroupTuning &tuning = tunings[size_t(g)];
    auto setupStart = Clock::now();
    KILN_TRY(tuning.problem, makeGroupProblem(tunedGraph, *tuning.group,
                                              std::max(1, tunerOptions.inputSets),
                                              tunerOptions.seed + uint64_t(tuning.group->id)));
    KILN_TRY(tuning.timer, target.makeTimer(tuning.problem));
    report.setupSeconds += secondsSince(setupStart);
    std::vector<size_t> first{0};
    if (exhaustive || tunerOptions.maxTrials == 0)
      tuning.tried = std::min<size_t>(size_t(run.threads() - 1), tuning.order.size());
    first.insert(first.end(), tuning.order.begin(), tuning.order.begin() + long(tuning.tried));
    run.runBatch(tuning, first, g, groupCount, int(first.size()));
    const CandidateTiming &baseline = tuning.result.candidates.front();
    tuning.result.defaultSeconds = baseline.valid ? baseline.medianSeconds : 0;
    tuning.weight = baseline.valid ? baseline.medianSeconds : 0;
    // Free the group's buffers until its turn comes.
    tuning.timer.reset();
  }
  double meanWeight = 0;
  for (const GroupTuning &tuning : tunings)
    meanWeight += tuning.weight / std::max(1, groupCount);
  for (GroupTuning &tuning : tunings)
    if (tuning.weight <= 0)
      tuning.weight = meanWeight > 0 ? meanWeight : 1;

  for (int g = 0; g < groupCount; ++g) {
    GroupTuning &tuning = tunings[size_t(g)];
    double weightLeft = 0;
    for (size_t h = size_t(g); h < tunings.size(); ++h)
      weightLeft += tunings[h].weight;
    double share = tuning.weight / weightLeft;

    int trials = static_cast<int>(tuning.order.size() - tuning.tried);
    if (!exhaustive && tunerOptions.maxTrials > 0) {
      int trialsLeft = std::max(0, tunerOptions.maxTrials - run.timed());
      int mine = g + 1 == groupCount ? trialsLeft : static_cast<int>(trialsLeft * share);
      trials = std::min(trials, mine);
    }
    // The budget is for the search: each group's one-off setup (inputs, the
    // reference) does not count against it.
    auto searchSeconds = [&] { return secondsSince(start) - report.setupSeconds; };
    double deadline = 0; // in searchSeconds(); 0: none
    if (!exhaustive && tunerOptions.budgetSeconds > 0) {
      double timeLeft = std::max(0.0, tunerOptions.budgetSeconds - searchSeconds());
      deadline = searchSeconds() + timeLeft * share;
    }
    int planned = trials + 1 + static_cast<int>(tuning.tried);
    run.report(TuneProgress::Kind::GroupStarted, tuning, g, groupCount, planned);
    if (trials > 0 && !(deadline > 0 && searchSeconds() >= deadline)) {
      KILN_TRY(tuning.timer, target.makeTimer(tuning.problem));
      for (int next = 0; next < trials;) {
        if (deadline > 0 && searchSeconds() >= deadline)
          break;
        int batch = std::min(run.threads(), trials - next);
        auto from = tuning.order.begin() + long(tuning.tried) + next;
        std::vector<size_t> indices(from, from + batch);
        run.runBatch(tuning, indices, g, groupCount, planned);
        next += batch;
      }
      tuning.timer.reset();
    }
    if (target.library) {
      KILN_TRY(tuning.timer, target.makeTimer(tuning.problem));
      run.runLibrary(tuning, g, groupCount, planned);
      tuning.timer.reset();
    }
    tuning.result.winner = fastestValid(tuning.result);
    run.report(TuneProgress::Kind::GroupFinished, tuning, g, groupCount, planned);
  }

  for (GroupTuning &tuning : tunings) {
    TunedGroup &result = tuning.result;
    if (const CandidateTiming *winner = result.winnerTiming()) {
      report.defaultSecondsTotal += result.defaultSeconds > 0 ? result.defaultSeconds
                                                              : winner->medianSeconds;
      report.bestSecondsTotal += winner->medianSeconds;
    }
    report.groups.push_back(std::move(result));
  }
  report.candidatesTimed = run.timed();
  report.seconds = secondsSince(start);
  return report;
}

int scheduleFamily(const lower::Schedule &schedule) {
  int family = static_cast<int>(schedule.index()) * 16;
  if (const auto *conv = std::get_if<lower::Conv2DSchedule>(&schedule))
    return family + 4 * static_cast<int>(conv->algorithm) + static_cast<int>(conv->gemm.parallel);
  if (const auto *gemm = std::get_if<lower::MatMulSchedule>(&schedule))
    return family + static_cast<int>(gemm->parallel);
  // GPU GEMMs: CUDA cores, mma.sync, wgmma on cp.async, wgmma fed by bulk tensor copies and
  // those on a persistent grid are five families, each tried early.
  auto gpuFamily = [](const lower::GpuMatMulSchedule &gemm) {
    return gemm.persistent ? 4 : gemm.tma ? 3 : gemm.wgmma ? 2 : gemm.tensorCores() ? 1 : 0;
  };
  if (const auto *gemm = std::get_if<lower::GpuMatMulSchedule>(&schedule))
    return family + gpuFamily(*gemm);
  if (const auto *conv = std::get_if<lower::GpuConv2DSchedule>(&schedule))
    return family + gpuFamily(conv->gemm);
  return family;
}

std::vector<size_t> searchOrder(const std::vector<lower::Schedule> &space,
                                const std::vector<size_t> &ranked) {
  int defaultFamily = scheduleFamily(space.front());
  std::vector<int> families; // by best rank
  std::map<int, std::vector<size_t>> members;
  for (size_t index : ranked) {
    if (index == 0)
      continue;
    int family = scheduleFamily(space[index]);
    if (members[family].empty())
      families.push_back(family);
    members[family].push_back(index);
  }
  std::stable_partition(families.begin(), families.end(),
                        [&](int family) { return family != defaultFamily; });
  std::vector<size_t> order;
  for (size_t round = 0; round < ranked.size() && order.size() + 1 < space.size(); ++round)
    for (int family : families)
      if (round < members[family].size())
        order.push_back(members[family][round]);
  return order;
}

std::function<std::optional<lower::Schedule>(const ir::Graph &, const passes::FusionGroup &)>
winnersAsScheduleChooser(const TuneReport &report) {
  auto winners = std::make_shared<std::map<std::string, lower::Schedule>>();
  // A library winner (cuDNN) is no schedule: compile() takes it from the
  // group's record, so the hook leaves that group to its default.
  for (const TunedGroup &group : report.groups)
    if (group.winner >= 0 && group.candidates[size_t(group.winner)].backend == "kiln")
      winners->emplace(group.identity.signature + '\n' + group.identity.shapes,
                       group.schedules[size_t(group.winner)]);
  return [winners](const ir::Graph &graph,
                   const passes::FusionGroup &group) -> std::optional<lower::Schedule> {
    GroupIdentity identity = groupIdentity(graph, group);
    auto it = winners->find(identity.signature + '\n' + identity.shapes);
    if (it == winners->end())
      return std::nullopt;
    return it->second;
  };
}

std::vector<TuningRecord> recordsFrom(const TuneReport &report,
                                      const std::string &targetFingerprint) {
  std::vector<TuningRecord> records;
  std::string tunedAt = nowUtc();
  for (const TunedGroup &group : report.groups) {
    const CandidateTiming *winner = group.winnerTiming();
    if (winner == nullptr)
      continue;
    TuningRecord record;
    record.key = tuningKey(group.identity, targetFingerprint);
    record.schedule = winner->schedule;
    record.backend = winner->backend;
    record.bestSeconds = winner->medianSeconds;
    record.defaultSeconds = group.defaultSeconds;
    record.candidatesTimed = static_cast<int>(group.candidates.size());
    record.summary = group.identity.summary;
    record.tunedAt = tunedAt;
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<SweepGroup> sweepFrom(const TuneReport &report) {
  std::vector<SweepGroup> sweep;
  for (const TunedGroup &group : report.groups)
    sweep.push_back(SweepGroup{tuningKey(group.identity, report.targetFingerprint),
                               group.identity.summary, group.candidates});
  return sweep;
}

} // namespace kiln::tuning
