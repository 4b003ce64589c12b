// Running an all_reduce step of a launch plan: the one place a plan calls a
// communicator (docs/distributed.md). No communicator, or one of size 1, makes
// the step a copy: one rank's all-reduce is the identity.
#pragma once

#include "runtime/LaunchPlan.h"

namespace kiln::runtime {

/// Host plans: copies `source` into `result` (unless they are the same bytes),
/// then all-reduces `result` in place, blocking until every rank has joined.
Expected<void> runHostAllReduce(const PlanStep &step, const PlanBuffer &resultBuffer,
                                const void *source, void *result,
                                dist::Communicator *communicator);

/// Device plans: the copy and the all-reduce are enqueued on `stream`; the
/// communicator must reduce device buffers (NCCL).
Expected<void> runDeviceAllReduce(const PlanStep &step, const PlanBuffer &resultBuffer,
                                  DevicePtr source, DevicePtr result, Device &device,
                                  dist::Communicator *communicator, Stream stream);

/// Whether a plan has a collective step (a launch graph cannot replay one: the
/// communicator's calls must happen on every run).
bool hasCollectiveSteps(const LaunchPlan &plan);

} // namespace kiln::runtime
