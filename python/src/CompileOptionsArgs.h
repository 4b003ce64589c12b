// The compile keywords every entry point of the package shares (kiln.compile, kiln.groups,
// kiln.tune, kiln.sweep, kiln.train): target, precision, backend, GPU architecture, and the
// schedules forced per fusion group.
#pragma once

#include "compiler/Compile.h"

#include <map>
#include <memory>
#include <set>
#include <string>

namespace kiln::python {

/// CompileOptions for a target ("cpu", "sim", "cuda", "auto"), a precision policy, a GPU
/// backend ("llvm", "nvrtc") and a GPU architecture (empty: the default). Bad names are
/// kiln.Errors listing the valid ones.
CompileOptions compileOptionsOf(const std::string &target, const std::string &precision,
                                const std::string &backend, const std::string &gpuArch);

/// Schedules forced on fusion groups, by group id (the `group N` of the fused dump and of
/// the tuner), as schedule text (lower::scheduleStr's form).
using ForcedSchedules = std::map<int, std::string>;

/// Which forced groups a compile lowered: filled by the hook forceSchedules installs.
struct ForcedScheduleUse {
  std::set<int> lowered;
};

/// Installs options.chooseSchedule so that each group in `schedules` is lowered with its
/// schedule (every text is parsed first: a bad one is a kiln.Error naming the group); the
/// other groups keep the default (or their tuning record). `use` records the groups seen.
void forceSchedules(CompileOptions &options, const ForcedSchedules &schedules,
                    const std::shared_ptr<ForcedScheduleUse> &use);

/// After a compile with forceSchedules: a forced group id the compile never lowered is a
/// kiln.Error naming it and the groups that have kernels.
void checkForcedSchedulesUsed(const ForcedSchedules &schedules, const ForcedScheduleUse &use);

} // namespace kiln::python
