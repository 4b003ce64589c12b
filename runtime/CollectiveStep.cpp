#include "runtime/CollectiveStep.h"

#include "runtime/CommunicationThread.h"

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

double millisecondsBetween(HostCollectives::Clock::time_point from,
                           HostCollectives::Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// Whether two byte ranges share a byte: host pointers and device addresses
/// alike, compared as numbers, so aliases and arena reuse need no marks.
bool rangesOverlap(uint64_t aBegin, int64_t aBytes, uint64_t bBegin, int64_t bBytes) {
  return aBytes > 0 && bBytes > 0 && aBegin < bBegin + static_cast<uint64_t>(bBytes) &&
         bBegin < aBegin + static_cast<uint64_t>(aBytes);
}

bool overlaps(const ByteRange &a, const ByteRange &b) {
  return rangesOverlap(reinterpret_cast<uintptr_t>(a.begin), a.bytes,
                       reinterpret_cast<uintptr_t>(b.begin), b.bytes);
}

bool overlaps(const DeviceRange &a, const DeviceRange &b) {
  return rangesOverlap(a.begin, a.bytes, b.begin, b.bytes);
}

} // namespace

std::string collectiveEventName(int ordinal) {
  return fmt::format("all_reduce bucket {}", ordinal);
}

bool HostCollectives::needsThread(const LaunchPlan &plan, const dist::Communicator *communicator) {
  return reducesAcrossRanks(communicator) && hasCollectiveSteps(plan);
}

HostCollectives::HostCollectives(const LaunchPlan &plan, dist::Communicator *communicator,
                                 CommunicationThread *thread, RunProfile *profile,
                                 Clock::time_point runStart)
    : plan_(plan), communicator_(communicator), thread_(thread), profile_(profile),
      runStart_(runStart), ordinals_(plan.steps.size(), -1),
      flight_(std::make_shared<Flight>()) {
  KILN_CHECK(thread_ || !needsThread(plan, communicator),
             "a run that reduces across ranks needs its model's communication thread");
  int ordinal = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == StepKind::AllReduce)
      ordinals_[i] = ordinal++;
}

HostCollectives::~HostCollectives() {
  std::unique_lock lock(flight_->mutex);
  for (size_t i = 0; i < flight_->buckets.size(); ++i)
    waitUntil(lock, i);
}

Expected<void> HostCollectives::start(int stepIndex, const void *source, void *result) {
  const PlanStep &step = plan_.steps[static_cast<size_t>(stepIndex)];
  KILN_CHECK(step.kind == StepKind::AllReduce && step.args.size() == 2,
             "an all_reduce step takes a source and a result buffer");
  const PlanBuffer &resultBuffer = plan_.buffers[static_cast<size_t>(step.args[1])];
  // The copy runs here: the operand's bytes may be reused by the next kernel.
  if (source != result && resultBuffer.bytes > 0)
    std::memcpy(result, source, static_cast<size_t>(resultBuffer.bytes));
  if (!reducesAcrossRanks(communicator_))
    return {};
  KILN_TRY_VOID(requireSpace(step, *communicator_, dist::MemorySpace::Host));
  size_t index;
  {
    std::lock_guard lock(flight_->mutex);
    if (flight_->failure)
      return std::unexpected(*flight_->failure);
    index = flight_->buckets.size();
    flight_->buckets.push_back({stepIndex, ordinals_[static_cast<size_t>(stepIndex)],
                                {static_cast<const std::byte *>(result), resultBuffer.bytes},
                                resultBuffer.bytes / dtypeByteSize(resultBuffer.dtype)});
  }
  // The job holds the flight: it unlocks the flight's mutex after the run may
  // have seen its bucket done and returned.
  thread_->enqueue([this, flight = flight_, index, communicator = communicator_] {
    reduce(*flight, index, communicator);
  });
  return {};
}

void HostCollectives::reduce(Flight &flight, size_t index, dist::Communicator *communicator) {
  // `this` is used only until the bucket is marked done: the run may end then.
  const PlanStep *step;
  void *data;
  int64_t count;
  Clock::time_point runStart = runStart_;
  {
    std::lock_guard lock(flight.mutex);
    Bucket &bucket = flight.buckets[index];
    step = &plan_.steps[static_cast<size_t>(bucket.step)];
    data = const_cast<std::byte *>(bucket.result.begin);
    count = bucket.elements;
    if (flight.failure) { // an earlier bucket failed: the run is over
      bucket.done = true;
      flight.changed.notify_all();
      return;
    }
  }
  DType dtype = plan_.buffers[static_cast<size_t>(step->args[1])].dtype;
  auto begin = Clock::now();
  Expected<void> done =
      withStepName(*step, communicator->allReduce(data, count, dtype, step->reduceOp));
  auto end = Clock::now();
  std::lock_guard lock(flight.mutex);
  Bucket &bucket = flight.buckets[index];
  bucket.done = true;
  bucket.startMs = millisecondsBetween(runStart, begin);
  bucket.durationMs = millisecondsBetween(begin, end);
  if (!done && !flight.failure)
    flight.failure = std::move(done).error();
  flight.changed.notify_all();
}

void HostCollectives::waitUntil(std::unique_lock<std::mutex> &lock, size_t index) {
  flight_->changed.wait(lock, [&] { return flight_->buckets[index].done; });
}

Expected<void> HostCollectives::waitForOverlap(std::span<const ByteRange> ranges) {
  std::unique_lock lock(flight_->mutex);
  for (size_t i = 0; i < flight_->buckets.size(); ++i) {
    if (flight_->buckets[i].done)
      continue;
    for (const ByteRange &range : ranges)
      if (overlaps(flight_->buckets[i].result, range)) {
        waitUntil(lock, i);
        break;
      }
  }
  if (flight_->failure)
    return std::unexpected(*flight_->failure);
  return {};
}

Expected<void> HostCollectives::finish() {
  std::unique_lock lock(flight_->mutex);
  for (size_t i = 0; i < flight_->buckets.size(); ++i)
    waitUntil(lock, i);
  if (flight_->failure)
    return std::unexpected(*flight_->failure);
  if (profile_)
    for (const Bucket &bucket : flight_->buckets)
      profile_->events.push_back({collectiveEventName(bucket.ordinal),
                                  ProfileCategory::Communication, bucket.step, bucket.startMs,
                                  bucket.durationMs, bucket.result.bytes, bucket.elements});
  return {};
}

bool DeviceCollectives::needsStream(const LaunchPlan &plan,
                                    const dist::Communicator *communicator) {
  return reducesAcrossRanks(communicator) && hasCollectiveSteps(plan);
}

size_t DeviceCollectives::eventsNeeded(const LaunchPlan &plan) {
  return 1 + 2 * static_cast<size_t>(std::ranges::count_if(
                 plan.steps, [](const PlanStep &step) { return step.kind == StepKind::AllReduce; }));
}

DeviceCollectives::DeviceCollectives(const LaunchPlan &plan, dist::Communicator *communicator,
                                     Device &device, Stream compute, Stream communication,
                                     std::span<const Event> events, bool timed)
    : plan_(plan), communicator_(communicator), device_(device), compute_(compute),
      communication_(communication), events_(events), timed_(timed),
      ordinals_(plan.steps.size(), -1) {
  KILN_CHECK(!needsStream(plan, communicator) ||
                 (communication.handle != compute.handle && events.size() >= eventsNeeded(plan)),
             "a device run that reduces across ranks needs a communication stream and its events");
  int ordinal = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].kind == StepKind::AllReduce)
      ordinals_[i] = ordinal++;
}

Expected<void> DeviceCollectives::start(int stepIndex, DevicePtr source, DevicePtr result) {
  const PlanStep &step = plan_.steps[static_cast<size_t>(stepIndex)];
  KILN_CHECK(step.kind == StepKind::AllReduce && step.args.size() == 2,
             "an all_reduce step takes a source and a result buffer");
  const PlanBuffer &resultBuffer = plan_.buffers[static_cast<size_t>(step.args[1])];
  if (source != result && resultBuffer.bytes > 0)
    KILN_TRY_VOID(device_.copyOnDevice(result, source, resultBuffer.bytes, compute_));
  if (!reducesAcrossRanks(communicator_))
    return {};
  KILN_TRY_VOID(requireSpace(step, *communicator_, dist::MemorySpace::Device));
  // The fork: the communication stream starts once the compute stream has
  // written the bucket. One event serves every bucket: a wait takes the
  // event's state when it is enqueued, so re-recording it later is safe.
  Event ready = events_[0];
  KILN_TRY_VOID(withStepName(step, device_.record(ready, compute_)));
  KILN_TRY_VOID(withStepName(step, device_.waitEvent(communication_, ready)));
  Bucket bucket{stepIndex, {result, resultBuffer.bytes},
                resultBuffer.bytes / dtypeByteSize(resultBuffer.dtype),
                events_[1 + 2 * buckets_.size()], events_[2 + 2 * buckets_.size()]};
  if (timed_)
    KILN_TRY_VOID(withStepName(step, device_.record(bucket.started, communication_)));
  // A device address as the communicator's buffer: NCCL takes device pointers.
  KILN_TRY_VOID(withStepName(step, communicator_->allReduce(reinterpret_cast<void *>(result),
                                                            bucket.elements, resultBuffer.dtype,
                                                            step.reduceOp, communication_)));
  KILN_TRY_VOID(withStepName(step, device_.record(bucket.done, communication_)));
  buckets_.push_back(bucket);
  return {};
}

Expected<void> DeviceCollectives::joinThrough(size_t last) {
  // The communication stream runs its buckets in order: the last one's event
  // stands for every one before it.
  KILN_TRY_VOID(device_.waitEvent(compute_, buckets_[last].done));
  joined_ = last + 1;
  return {};
}

Expected<void> DeviceCollectives::waitForOverlap(std::span<const DeviceRange> ranges) {
  for (size_t i = buckets_.size(); i-- > joined_;)
    for (const DeviceRange &range : ranges)
      if (overlaps(buckets_[i].result, range))
        return joinThrough(i);
  return {};
}

Expected<void> DeviceCollectives::finish() {
  return inFlight() ? joinThrough(buckets_.size() - 1) : Expected<void>{};
}

Expected<void> DeviceCollectives::profile(RunProfile &profile, Event runStart) const {
  KILN_CHECK(timed_, "DeviceCollectives::profile of a run that was not timed");
  for (const Bucket &bucket : buckets_) {
    KILN_TRY(double startMs, device_.elapsedMs(runStart, bucket.started));
    KILN_TRY(double endMs, device_.elapsedMs(runStart, bucket.done));
    profile.events.push_back({collectiveEventName(ordinals_[static_cast<size_t>(bucket.step)]),
                              ProfileCategory::Communication, bucket.step, startMs,
                              endMs - startMs, bucket.result.bytes, bucket.elements});
  }
  return {};
}

bool hasCollectiveSteps(const LaunchPlan &plan) {
  return std::ranges::any_of(plan.steps,
                             [](const PlanStep &step) { return step.kind != StepKind::Kernel; });
}

} // namespace kiln::runtime
