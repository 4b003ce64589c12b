// The compile pipeline, as straight-line code: each stage is one call, and
// each can print what it produced.
#include "compiler/Compile.h"

#include "codegen/llvm/HostBackend.h"
#include "compiler/LaunchPlanBuilder.h"
#include "ir/graph/Clone.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "ir/kernel/Printer.h"
#include "passes/PassManager.h"
#include "passes/graph/GraphPasses.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/Lower.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Graph passes before fusion: clean up, then decompose the composite ops that
/// have no kernel template of their own (attention becomes matmuls and a softmax).
Expected<void> runGraphPasses(ir::Graph &graph, bool verifyEach) {
  passes::PassManager pm;
  pm.setVerifyEach(verifyEach);
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  pm.add(passes::createDecomposePass({ir::OpKind::ScaledDotProductAttention}));
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  KILN_TRY_VOID(pm.run(graph));
  return {};
}

std::string describeTarget(const codegen::CpuTarget &target) {
  return fmt::format("cpu {} {} ({}-bit vectors, {} threads)", target.triple, target.cpuName,
                     target.vectorBits, target.cores);
}

} // namespace

Expected<CompiledModel> compile(const ir::Graph &userGraph, const CompileOptions &options,
                                CompileReport *report) {
  auto start = Clock::now();
  std::ostream &dump = options.dumpStream ? *options.dumpStream : std::cerr;
  CompileReport localReport;
  CompileReport &r = report ? *report : localReport;
  r = {};

  codegen::CpuTarget target = codegen::hostCpuTarget();
  r.target = describeTarget(target);
  if (options.target == TargetKind::Auto)
    r.fallbackReason = "this build of kiln has no GPU runtime yet; running on the CPU";

  KILN_TRY_VOID(ir::verifyGraph(userGraph));
  KILN_TRY(auto graph, ir::cloneGraph(userGraph));
  KILN_TRY_VOID(runGraphPasses(*graph, options.verifyEach));
  if (options.dump & kDumpGraph)
    dump << "// ---- graph after graph passes\n" << ir::printGraph(*graph);
  r.graphPassSeconds = secondsSince(start);

  auto lowerStart = Clock::now();
  KILN_TRY(passes::FusionPlan fusion, passes::planFusion(*graph));
  r.numGroups = static_cast<int>(fusion.groups.size());
  if (options.fusedGraphDot)
    r.fusedGraphDot = passes::fusionPlanToDot(*graph, fusion);
  std::vector<std::optional<lower::LoweredKernel>> kernels(fusion.groups.size());
  std::vector<kir::Kernel> kernelList;
  std::string scheduleListing;
  for (size_t g = 0; g < fusion.groups.size(); ++g) {
    const passes::FusionGroup &group = fusion.groups[g];
    if (group.kind == passes::GroupKind::Alias || group.kind == passes::GroupKind::Constant)
      continue;
    std::optional<lower::Schedule> schedule;
    if (options.chooseSchedule)
      schedule = options.chooseSchedule(*graph, group);
    if (!schedule)
      schedule = lower::defaultSchedule(*graph, group, target);
    scheduleListing +=
        fmt::format("//   group {} schedule: {}\n", group.id, lower::scheduleStr(*schedule));
    KILN_TRY(lower::LoweredKernel lowered,
             lower::lowerGroupForCpu(*graph, group, *schedule, target));
    lowered.kernel = kir::runKernelPasses(std::move(lowered.kernel));
    kernelList.push_back(lowered.kernel);
    kernels[g] = std::move(lowered);
  }
  r.numKernels = static_cast<int>(kernelList.size());
  if (options.dump & kDumpFused)
    dump << "// ---- fusion groups\n"
         << passes::printFusionPlan(*graph, fusion) << scheduleListing;
  if (options.dump & kDumpKernel)
    for (const kir::Kernel &kernel : kernelList)
      dump << "// ---- kernel " << kernel.name << "\n" << kir::printKernel(kernel);
  r.loweringSeconds = secondsSince(lowerStart);

  auto codegenStart = Clock::now();
  if (options.dump & kDumpLlvm)
    for (const kir::Kernel &kernel : kernelList) {
      KILN_TRY(std::string llvmIr, codegen::emitHostLlvmIr(kernel, target, /*optimized=*/true));
      dump << "// ---- LLVM IR of " << kernel.name << "\n" << llvmIr;
    }
  KILN_TRY(std::shared_ptr<codegen::HostModule> module,
           codegen::compileHostModule(kernelList, target));
  r.codegenSeconds = secondsSince(codegenStart);

  auto lookup = [&](std::string_view name) {
    return reinterpret_cast<runtime::CpuKernelFn>(module->lookup(name));
  };
  KILN_TRY(runtime::LaunchPlan plan, compiler::buildLaunchPlan(*graph, fusion, kernels, lookup));
  r.totalSeconds = secondsSince(start);
  return CompiledModel(std::move(plan), std::shared_ptr<const void>(module));
}

} // namespace kiln
