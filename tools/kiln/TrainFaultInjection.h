// kiln train's fault-injection hook for the data-parallel tests: $KILN_TRAIN_FAULT
// makes one rank misbehave at one step (docs/distributed.md, "Training across
// processes: the command"). Nothing else sets or reads it.
#pragma once

#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <optional>
#include <vector>

namespace kiln::tool {

/// "$KILN_TRAIN_FAULT=KIND:RANK:STEP": before training step STEP (0-based, over
/// the run) on rank RANK,
///   overflow  sets the first element of every floating-point input of the step's
///             micro-batches to +inf, as an fp16 overflow would, so that rank's
///             gradients are not finite (loss scaling must skip the step on every
///             rank);
///   exit      ends the rank at once (_Exit(137): no destructors, no MPI_Finalize),
///             as a crashed or killed process vanishes (the others must fail
///             within the collective timeout, naming it). Not SIGKILL itself:
///             Open MPI 4.1's mpirun then never returns when told to keep the
///             survivors alive (orte_abort_on_non_zero_status 0).
struct TrainFault {
  enum class Kind { Overflow, Exit };
  Kind kind;
  int64_t rank = 0;
  int64_t step = 0;
};

/// The fault $KILN_TRAIN_FAULT asks for, nullopt when it is unset or empty;
/// InvalidArgument naming the variable when it is malformed.
Expected<std::optional<TrainFault>> trainFaultFromEnvironment();

/// The RecipeTrainingOptions::beforeStep hook that injects `fault` on rank `rank`.
std::function<Expected<void>(int64_t step, std::vector<NamedTensors> &microBatches)>
faultInjectionHook(TrainFault fault, int64_t rank);

} // namespace kiln::tool
