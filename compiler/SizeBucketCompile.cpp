// Size buckets: a bucket per bound, lowered separately, compiled into one host module.
#include "compiler/SizeBucketCompile.h"

#include "codegen/llvm/HostBackend.h"
#include "compiler/HostModuleCache.h"
#include "compiler/LaunchPlanBuilder.h"
#include "compiler/Pipeline.h"
#include "ir/graph/Specialize.h"
#include "ir/kernel/Printer.h"
#include "support/Elapsed.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

/// A kernel's text without its name and its parameters' extents: two kernels with the same
/// key compute the same thing on any buffers their sizes keep in bounds.
std::string kernelKey(const kir::Kernel &kernel) {
  std::string key;
  for (const kir::BufferPtr &param : kernel.params)
    key += fmt::format("{}:{}:{};", param->name, dtypeName(param->dtype),
                       static_cast<int>(param->scope));
  std::string text = kir::printKernel(kernel);
  size_t body = text.find('\n'); // the header line names the kernel and the extents
  return key + (body == std::string::npos ? std::string() : text.substr(body));
}

struct Bucket {
  int64_t bound = 0;
  std::unique_ptr<ir::Graph> graph; ///< null for the largest: the user's graph
  LoweredProgram program;
  std::vector<std::string> kernelNames; ///< launch order, after sharing
};

/// Renames every kernel of `kernel` by `names` (old name -> new name).
void renameKernels(lower::LoweredKernel &kernel, const std::map<std::string, std::string> &names) {
  kernel.kernel.name = names.at(kernel.kernel.name);
  if (kernel.prelude)
    kernel.prelude->name = names.at(kernel.prelude->name);
  for (kir::Kernel &followUp : kernel.followUps)
    followUp.name = names.at(followUp.name);
}

} // namespace

Expected<std::unique_ptr<ir::Graph>> sizeBucketGraph(const ir::Graph &graph, int64_t bound) {
  const ir::SizeSymbol &symbol = graph.symbols().front();
  if (bound == symbol.min)
    return ir::specialize(graph, {{symbol.name, bound}});
  ir::SizeSymbol narrowed{symbol.name, symbol.min, bound};
  return ir::narrowSymbols(graph, std::span(&narrowed, 1));
}

Expected<std::vector<int64_t>>
sizeBucketBounds(const ir::Graph &graph, const std::optional<std::vector<int64_t>> &requested) {
  if (graph.symbols().size() != 1) {
    if (requested && !requested->empty())
      return makeError(ErrorCode::Unsupported,
                       fmt::format("size buckets take a graph with one size symbol; @{} has {}",
                                   graph.name(), graph.symbols().size()));
    return std::vector<int64_t>{graph.isSymbolic() ? graph.symbols().front().max : 0};
  }
  const ir::SizeSymbol &symbol = graph.symbols().front();
  std::set<int64_t> bounds{symbol.max};
  if (requested) {
    for (int64_t bound : *requested) {
      if (bound < symbol.min || bound > symbol.max)
        return makeError(
            ErrorCode::InvalidArgument,
            fmt::format("size bucket bound {} is outside the range of {}", bound, symbol.str()));
      bounds.insert(bound);
    }
  } else {
    // A size 0 runs in the bucket above it rather than as a graph of empty tensors.
    int64_t least = std::max<int64_t>(symbol.min, 1);
    bounds.insert(std::min(least, symbol.max));
    for (int64_t power = 1; power < symbol.max; power *= 2)
      if (power > least)
        bounds.insert(power);
  }
  return std::vector<int64_t>(bounds.begin(), bounds.end());
}

Expected<LoweredSizeBuckets> lowerSizeBuckets(const ir::Graph &graph,
                                              std::span<const int64_t> bounds,
                                              const CompileOptions &options,
                                              const codegen::CpuTarget &target,
                                              const LazyFingerprint &targetFingerprint,
                                              std::ostream &dump, CompileReport &report) {
  const ir::SizeSymbol &symbol = graph.symbols().front();
  // Largest first: its kernels keep their names, and a smaller bucket's kernel equal to one of
  // them is that one.
  std::vector<Bucket> buckets(bounds.size());
  for (size_t i = 0; i < bounds.size(); ++i) {
    Bucket &bucket = buckets[i];
    bucket.bound = bounds[bounds.size() - 1 - i];
    if (bucket.bound != symbol.max) {
      KILN_TRY(bucket.graph, sizeBucketGraph(graph, bucket.bound));
    }
    if (options.dump != 0)
      dump << fmt::format("// ==== size bucket {} <= {}\n", symbol.name, bucket.bound);
    CompileReport bucketReport;
    KILN_TRY(bucket.program, lowerProgram(bucket.graph ? *bucket.graph : graph, options, target,
                                          targetFingerprint, dump, bucketReport));
    report.graphPassSeconds += bucketReport.graphPassSeconds;
    report.loweringSeconds += bucketReport.loweringSeconds;
    for (const std::string &line : bucketReport.tuningRecords)
      report.tuningRecords.push_back(fmt::format("{} <= {}: {}", symbol.name, bucket.bound, line));
    report.warnings.insert(report.warnings.end(), bucketReport.warnings.begin(),
                           bucketReport.warnings.end());
    if (i == 0) {
      report.numGroups = bucketReport.numGroups;
      report.tuning = bucketReport.tuning;
    }
  }

  // The tuning line counts every bucket's groups (each bucket has records of its own).
  int kernelGroups = 0, fromRecords = 0;
  for (const Bucket &bucket : buckets)
    for (size_t g = 0; g < bucket.program.fusion.groups.size(); ++g) {
      kernelGroups += passes::needsKernel(bucket.program.fusion.groups[g]) ? 1 : 0;
      const auto &record = bucket.program.groupRecords[g];
      fromRecords += record && record->backend == "kiln" ? 1 : 0;
    }
  if (fromRecords > 0)
    report.tuning = fmt::format("{} of {} groups in the {} buckets have records ({} for the "
                                "whole range)",
                                fromRecords, kernelGroups, buckets.size(), report.tuning);

  // Share equal kernels, and name the rest after their bucket.
  LoweredSizeBuckets lowered;
  std::map<std::string, std::string> nameOfKey;
  size_t numLowered = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    Bucket &bucket = buckets[i];
    std::string prefix = i == 0 ? "" : fmt::format("b{}_", bucket.bound);
    std::map<std::string, std::string> names;
    for (const kir::Kernel &kernel : bucket.program.kernels) {
      auto [it, added] = nameOfKey.emplace(kernelKey(kernel), prefix + kernel.name);
      if (added) {
        lowered.kernels.push_back(kernel);
        lowered.kernels.back().name = it->second;
      }
      names[kernel.name] = it->second;
      bucket.kernelNames.push_back(it->second);
    }
    numLowered += bucket.program.kernels.size();
    for (std::optional<lower::LoweredKernel> &kernel : bucket.program.groupKernels)
      if (kernel)
        renameKernels(*kernel, names);
  }
  std::set<std::string> preludes; // by name: a shared prelude counts once
  for (const Bucket &bucket : buckets)
    for (const std::optional<lower::LoweredKernel> &kernel : bucket.program.groupKernels)
      if (kernel && kernel->prelude)
        preludes.insert(kernel->prelude->name);
  report.numKernels = static_cast<int>(lowered.kernels.size());
  report.numPreludeKernels = static_cast<int>(preludes.size());

  // A bucket that runs exactly the next larger kept bucket's kernels is dropped: that one
  // runs its sizes as well.
  std::vector<size_t> kept{0};
  for (size_t i = 1; i < buckets.size(); ++i)
    if (buckets[i].kernelNames != buckets[kept.back()].kernelNames)
      kept.push_back(i);
  std::vector<int64_t> keptBounds;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it)
    keptBounds.push_back(buckets[*it].bound);
  for (size_t i : kept)
    lowered.buckets.push_back(
        {buckets[i].bound, std::move(buckets[i].graph), std::move(buckets[i].program)});
  size_t merged = buckets.size() - kept.size();
  report.sizeBuckets = fmt::format(
      "{}: {} bucket{}, {} <= {}{}; {} distinct kernels of {} lowered", symbol.str(), kept.size(),
      kept.size() == 1 ? "" : "s", symbol.name, fmt::join(keptBounds, ", "),
      merged == 0 ? "" : fmt::format(" ({} more ran the kernels of a larger one)", merged),
      lowered.kernels.size(), numLowered);
  return lowered;
}

Expected<CompiledModel> compileSizeBuckets(const ir::Graph &graph, std::span<const int64_t> bounds,
                                           const CompileOptions &options,
                                           const codegen::CpuTarget &target,
                                           const LazyFingerprint &targetFingerprint,
                                           std::ostream &dump, CompileReport &report) {
  KILN_TRY(LoweredSizeBuckets lowered,
           lowerSizeBuckets(graph, bounds, options, target, targetFingerprint, dump, report));
  auto codegenStart = Clock::now();
  if (options.dump & kDumpLlvm)
    for (const kir::Kernel &kernel : lowered.kernels) {
      KILN_TRY(std::string llvmIr, codegen::emitHostLlvmIr(kernel, target, /*optimized=*/true));
      dump << "// ---- LLVM IR of " << kernel.name << "\n" << llvmIr;
    }
  KILN_TRY(std::shared_ptr<codegen::HostModule> module,
           hostModuleFor(lowered.kernels, target, options, report));
  report.codegenSeconds = secondsSince(codegenStart);
  auto lookup = [&](std::string_view name) {
    auto fn = reinterpret_cast<runtime::CpuKernelFn>(module->lookup(name));
    return runtime::KernelEntry::host(fn);
  };

  std::vector<CompiledModel> models;
  for (const LoweredSizeBuckets::Bucket &bucket : lowered.buckets) {
    const LoweredProgram &program = bucket.program;
    KILN_TRY(runtime::LaunchPlan plan,
             buildLaunchPlan(*program.graph, program.fusion, program.groupKernels, lookup,
                             DerivedValues::Kept));
    models.emplace_back(std::move(plan), std::shared_ptr<const void>(module));
  }
  CompiledModel front = std::move(models.front());
  for (size_t i = models.size() - 1; i >= 1; --i)
    KILN_TRY_VOID(front.addSizeBucket({lowered.buckets[i].bound}, std::move(models[i])));
  return front;
}

} // namespace kiln::compiler
