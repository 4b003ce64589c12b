// printLoweredGraph: fusion plan, default schedules and kernels as one text.
#include "passes/lower/PrintLowered.h"

#include "ir/kernel/Printer.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"
#include "passes/lower/Schedule.h"

#include <fmt/format.h>

namespace kiln::lower {

std::string printLoweredGraph(const ir::Graph &graph, const codegen::CpuTarget &target) {
  auto plan = passes::planFusion(graph);
  if (!plan)
    return fmt::format("// error: {}\n", plan.error().message());
  std::string text;
  for (const passes::FusionGroup &group : plan->groups) {
    Schedule schedule = defaultSchedule(graph, group, target);
    text += fmt::format("// group {} {} schedule: {}\n", group.id,
                        passes::groupKindName(group.kind), scheduleStr(schedule));
    if (!passes::needsKernel(group))
      continue;
    auto lowered = lowerGroup(graph, group, schedule, target);
    if (!lowered) {
      text += fmt::format("// error: {}\n", lowered.error().message());
      continue;
    }
    // In launch order: the prelude (a weight packed once), the kernel, its follow-ups.
    if (lowered->prelude)
      text += kir::printKernel(*lowered->prelude);
    text += kir::printKernel(lowered->kernel);
    for (const kir::Kernel &followUp : lowered->followUps)
      text += kir::printKernel(followUp);
  }
  return text;
}

} // namespace kiln::lower
