// Graph passes, fusion and lowering: the part of a compile every target shares.
#include "compiler/Pipeline.h"

#include "ir/graph/Clone.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "ir/kernel/Printer.h"
#include "passes/PassManager.h"
#include "passes/graph/GraphPasses.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/gpu/GpuLower.h"

#include <fmt/format.h>

#include <chrono>

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Graph passes before fusion: clean up, decompose the composite ops that have
/// no kernel template of their own (attention becomes matmuls and a softmax),
/// apply the precision policy to every contraction, those matmuls included,
/// and clean up again (`fold` narrows cast constants, `cse` merges casts).
Expected<void> runGraphPasses(ir::Graph &graph, const CompileOptions &options) {
  passes::PassManager pm;
  pm.setVerifyEach(options.verifyEach);
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  pm.add(passes::createDecomposePass({ir::OpKind::ScaledDotProductAttention}));
  if (options.precision != passes::PrecisionPolicy::Fp32)
    pm.add(passes::createPrecisionPass(options.precision));
  KILN_TRY_VOID(pm.addPipeline("simplify,fold,cse,dce"));
  KILN_TRY_VOID(pm.run(graph));
  return {};
}

lower::Schedule defaultScheduleFor(const ir::Graph &graph, const passes::FusionGroup &group,
                                   const LoweringTarget &target) {
  if (const auto *gpu = std::get_if<codegen::GpuTarget>(&target))
    return lower::defaultGpuSchedule(graph, group, *gpu);
  return lower::defaultSchedule(graph, group, std::get<codegen::CpuTarget>(target));
}

Expected<lower::LoweredKernel> lowerGroup(const ir::Graph &graph,
                                          const passes::FusionGroup &group,
                                          const lower::Schedule &schedule,
                                          const LoweringTarget &target) {
  if (const auto *gpu = std::get_if<codegen::GpuTarget>(&target))
    return lower::lowerGroupForGpu(graph, group, schedule, *gpu);
  return lower::lowerGroupForCpu(graph, group, schedule, std::get<codegen::CpuTarget>(target));
}

} // namespace

Expected<LoweredProgram> lowerProgram(const ir::Graph &userGraph, const CompileOptions &options,
                                      const LoweringTarget &target, std::ostream &dump,
                                      CompileReport &report) {
  auto start = Clock::now();
  LoweredProgram program;
  KILN_TRY_VOID(ir::verifyGraph(userGraph));
  KILN_TRY(program.graph, ir::cloneGraph(userGraph));
  ir::Graph &graph = *program.graph;
  KILN_TRY_VOID(runGraphPasses(graph, options));
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
  std::string scheduleListing;
  for (size_t g = 0; g < program.fusion.groups.size(); ++g) {
    const passes::FusionGroup &group = program.fusion.groups[g];
    if (group.kind == passes::GroupKind::Alias || group.kind == passes::GroupKind::Constant)
      continue;
    std::optional<lower::Schedule> schedule;
    if (options.chooseSchedule)
      schedule = options.chooseSchedule(graph, group);
    if (!schedule)
      schedule = defaultScheduleFor(graph, group, target);
    scheduleListing +=
        fmt::format("//   group {} schedule: {}\n", group.id, lower::scheduleStr(*schedule));
    KILN_TRY(lower::LoweredKernel lowered, lowerGroup(graph, group, *schedule, target));
    lowered.kernel = kir::runKernelPasses(std::move(lowered.kernel));
    program.kernels.push_back(lowered.kernel);
    program.groupKernels[g] = std::move(lowered);
  }
  report.numKernels = static_cast<int>(program.kernels.size());
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
