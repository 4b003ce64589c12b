// The per-target lowering tables behind lower::defaultSchedule, scheduleSpace and
// lowerGroup (Lower.h): for each group kind that has a kernel on a target, how
// to pick its schedule, enumerate its schedules and lower it. The CPU's table
// is in CpuLoweringTable.cpp, the GPU's in gpu/GpuLoweringTable.cpp; a new kind
// or target is a new entry, not a new dispatcher.
#pragma once

#include "passes/lower/Lower.h"

#include <fmt/format.h>

#include <string_view>

namespace kiln::lower {

/// How one group kind becomes a kernel on targets of type `Target`.
template <typename Target> struct KindLowering {
  Schedule (*defaultSchedule)(const ir::Graph &, const passes::FusionGroup &, const Target &);
  /// The default first.
  std::vector<Schedule> (*scheduleSpace)(const ir::Graph &, const passes::FusionGroup &,
                                         const Target &);
  Expected<LoweredKernel> (*lower)(const ir::Graph &, const passes::FusionGroup &,
                                   const Schedule &, const Target &);
};

/// A target's lowering of `kind`: nullptr for the kinds without a kernel
/// (Constant, Alias) and those no kernel template of the target covers (Opaque).
const KindLowering<codegen::CpuTarget> *cpuKindLowering(passes::GroupKind kind);
const KindLowering<codegen::GpuTarget> *gpuKindLowering(passes::GroupKind kind);

/// The error for a group whose kind has no lowering on the target (`targetName`:
/// "CPU", "GPU"), naming the group's anchor (or root).
Error noKernelTemplate(const passes::FusionGroup &group, std::string_view targetName);

/// A schedule space being listed: the default first, then each added schedule
/// that is not there yet (compared as text).
struct SpaceBuilder {
  std::vector<Schedule> space;
  void add(Schedule s) {
    std::string text = scheduleStr(s);
    for (const Schedule &have : space)
      if (scheduleStr(have) == text)
        return;
    space.push_back(std::move(s));
  }
};

/// The schedule of type S that a kind's lowering takes, or an InvalidArgument
/// error naming the group (`what`: "schedule", "GPU schedule").
template <typename S>
Expected<const S *> scheduleOfKind(const passes::FusionGroup &group, const Schedule &schedule,
                                   std::string_view what) {
  if (const S *chosen = std::get_if<S>(&schedule))
    return chosen;
  return std::unexpected(
      Error(ErrorCode::InvalidArgument,
            fmt::format("lowering: {} '{}' does not apply to group {} ({} {})", what,
                        scheduleStr(schedule), group.id, passes::groupKindName(group.kind),
                        group.root->name())));
}

} // namespace kiln::lower
