#include "runtime/CollectiveStep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace kiln::runtime {

std::string_view stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel: return "kernel";
  case StepKind::AllReduce: return "all_reduce";
  }
  return "?";
}

namespace {

bool reducesAcrossRanks(const dist::Communicator *communicator) {
  return communicator != nullptr && communicator->size() > 1;
}

Expected<void> requireSpace(const PlanStep &step, const dist::Communicator &communicator,
                            dist::MemorySpace space) {
  if (communicator.memorySpace() == space)
    return {};
  bool wantsHost = space == dist::MemorySpace::Host;
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("all_reduce step '{}': the run's communicator ({}) reduces {} "
                               "buffers, but this model keeps its tensors on the {}",
                               step.kernelName, dist::describeRank(communicator),
                               wantsHost ? "device" : "host", wantsHost ? "host" : "device"));
}

Expected<void> withStepName(const PlanStep &step, Expected<void> done) {
  if (done)
    return done;
  return makeError(done.error().code(),
                   fmt::format("all_reduce step '{}': {}", step.kernelName,
                               done.error().message()));
}

} // namespace

Expected<void> runHostAllReduce(const PlanStep &step, const PlanBuffer &resultBuffer,
                                const void *source, void *result,
                                dist::Communicator *communicator) {
  KILN_CHECK(step.kind == StepKind::AllReduce && step.args.size() == 2,
             "an all_reduce step takes a source and a result buffer");
  if (source != result && resultBuffer.bytes > 0)
    std::memcpy(result, source, static_cast<size_t>(resultBuffer.bytes));
  if (!reducesAcrossRanks(communicator))
    return {};
  KILN_TRY_VOID(requireSpace(step, *communicator, dist::MemorySpace::Host));
  int64_t count = resultBuffer.bytes / dtypeByteSize(resultBuffer.dtype);
  return withStepName(step, communicator->allReduce(result, count, resultBuffer.dtype,
                                                    step.reduceOp));
}

Expected<void> runDeviceAllReduce(const PlanStep &step, const PlanBuffer &resultBuffer,
                                  DevicePtr source, DevicePtr result, Device &device,
                                  dist::Communicator *communicator, Stream stream) {
  KILN_CHECK(step.kind == StepKind::AllReduce && step.args.size() == 2,
             "an all_reduce step takes a source and a result buffer");
  if (source != result && resultBuffer.bytes > 0)
    KILN_TRY_VOID(device.copyOnDevice(result, source, resultBuffer.bytes, stream));
  if (!reducesAcrossRanks(communicator))
    return {};
  KILN_TRY_VOID(requireSpace(step, *communicator, dist::MemorySpace::Device));
  int64_t count = resultBuffer.bytes / dtypeByteSize(resultBuffer.dtype);
  // A device address as the communicator's buffer: NCCL takes device pointers.
  return withStepName(step, communicator->allReduce(reinterpret_cast<void *>(result), count,
                                                    resultBuffer.dtype, step.reduceOp, stream));
}

bool hasCollectiveSteps(const LaunchPlan &plan) {
  return std::ranges::any_of(plan.steps,
                             [](const PlanStep &step) { return step.kind != StepKind::Kernel; });
}

} // namespace kiln::runtime
