// The shared compile keywords and the forced-schedule hook (CompileOptionsArgs.h).
#include "CompileOptionsArgs.h"

#include "PythonErrors.h"

#include "passes/lower/Schedule.h"

#include <fmt/format.h>

namespace kiln::python {
namespace {

GpuBackend backendNamed(const std::string &name) {
  if (name == "llvm")
    return GpuBackend::Llvm;
  if (name == "nvrtc")
    return GpuBackend::Nvrtc;
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("unknown backend '{}' (use 'llvm' or 'nvrtc')", name))};
}

} // namespace

CompileOptions compileOptionsOf(const std::string &target, const std::string &precision,
                                const std::string &backend, const std::string &gpuArch) {
  CompileOptions options;
  options.target = valueOrThrow(parseTargetKind(target));
  options.precision = valueOrThrow(passes::parsePrecisionPolicy(precision));
  options.gpuBackend = backendNamed(backend);
  options.gpuArch = gpuArch;
  return options;
}

void forceSchedules(CompileOptions &options, const ForcedSchedules &schedules,
                    const std::shared_ptr<ForcedScheduleUse> &use) {
  if (schedules.empty())
    return;
  std::map<int, lower::Schedule> parsed;
  for (const auto &[groupId, text] : schedules) {
    Expected<lower::Schedule> schedule = lower::parseSchedule(text);
    if (!schedule)
      throw KilnError{Error(ErrorCode::InvalidArgument,
                            fmt::format("schedules[{}]: {}", groupId, schedule.error().message()))};
    parsed.emplace(groupId, std::move(*schedule));
  }
  options.chooseSchedule = [parsed = std::move(parsed), use](
                               const ir::Graph &, const passes::FusionGroup &group)
      -> std::optional<lower::Schedule> {
    use->lowered.insert(group.id);
    auto found = parsed.find(group.id);
    if (found == parsed.end())
      return std::nullopt;
    return found->second;
  };
}

void checkForcedSchedulesUsed(const ForcedSchedules &schedules, const ForcedScheduleUse &use) {
  for (const auto &[groupId, text] : schedules) {
    if (use.lowered.contains(groupId))
      continue;
    std::string groups;
    for (int id : use.lowered)
      groups += (groups.empty() ? "" : ", ") + std::to_string(id);
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("schedules: the model has no group {} with a kernel "
                                      "(its kernel groups: {})",
                                      groupId, groups.empty() ? "none" : groups))};
  }
}

} // namespace kiln::python
