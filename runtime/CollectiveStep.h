// Running the all_reduce steps of a launch plan: the one place a plan calls a
// communicator (docs/distributed.md). No communicator, or one of size 1, makes
// the step a copy: one rank's all-reduce is the identity.
#pragma once

#include "runtime/Device.h"
#include "runtime/LaunchPlan.h"
#include "runtime/Profile.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace kiln::runtime {

class CommunicationThread;

/// Bytes a step reads or writes on the host.
struct ByteRange {
  const std::byte *begin = nullptr;
  int64_t bytes = 0;
};

/// The all_reduce steps of one host run. Each copies its operand into its
/// result on the calling (compute) thread, then all-reduces the result on the
/// model's communication thread while the caller runs the kernels after it:
/// a kernel whose buffers share bytes with a bucket in flight waits for that
/// bucket first (waitForOverlap), and finish() waits for all of them. Without
/// a communicator of several ranks the step is the copy alone, and no thread
/// is needed. Errors name the step and keep the communicator's text (the
/// rank, the collective); after one, the run's later buckets are not started.
class HostCollectives {
public:
  using Clock = std::chrono::steady_clock;

  /// `thread` may be null only when needsThread() is false. Collectives are
  /// timed into `profile` (when set) from `runStart`.
  HostCollectives(const LaunchPlan &plan, dist::Communicator *communicator,
                  CommunicationThread *thread, RunProfile *profile, Clock::time_point runStart);
  /// Waits for the buckets still in flight: they write the run's buffers.
  ~HostCollectives();
  HostCollectives(const HostCollectives &) = delete;
  HostCollectives &operator=(const HostCollectives &) = delete;

  /// Whether running `plan` with `communicator` reduces across ranks, and so
  /// needs a communication thread.
  static bool needsThread(const LaunchPlan &plan, const dist::Communicator *communicator);

  /// Step `stepIndex` (an AllReduce): the copy here, the reduction enqueued.
  Expected<void> start(int stepIndex, const void *source, void *result);
  /// Waits for every bucket in flight whose result shares bytes with one of
  /// `ranges`; fails with the first failed bucket's error, if any has failed.
  Expected<void> waitForOverlap(std::span<const ByteRange> ranges);
  /// Waits for every bucket; the first failure's error. Records the
  /// collectives into the profile.
  Expected<void> finish();

private:
  struct Bucket {
    int step = -1;
    int ordinal = 0; ///< K of "all_reduce bucket K"
    ByteRange result;
    int64_t elements = 0;
    bool done = false;
    double startMs = 0, durationMs = 0;
  };
  /// What the compute and the communication thread share.
  struct Flight {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Bucket> buckets;
    std::optional<Error> failure; ///< the first bucket that failed
  };

  /// On the communication thread.
  void reduce(Flight &flight, size_t bucket, dist::Communicator *communicator);
  void waitUntil(std::unique_lock<std::mutex> &lock, size_t bucket);

  const LaunchPlan &plan_;
  dist::Communicator *communicator_;
  CommunicationThread *thread_;
  RunProfile *profile_;
  Clock::time_point runStart_;
  std::vector<int> ordinals_; ///< by step: the step's collective ordinal
  std::shared_ptr<Flight> flight_;
};

/// Bytes a step reads or writes on a device.
struct DeviceRange {
  DevicePtr begin = 0;
  int64_t bytes = 0;
};

/// The all_reduce steps of one device run, the device form of HostCollectives'
/// rules with streams and events in place of a thread. Each copies its operand
/// into its result on the compute stream (the operand's bytes may be reused by
/// the next kernel), records an event there, makes the communication stream
/// wait on it and enqueues the collective on the communication stream, then an
/// event after it; the compute stream goes on. Before a step whose buffers
/// share bytes with a bucket in flight (waitForOverlap: the slices back, the
/// update, arena reuse) the compute stream waits on that bucket's event, and
/// finish() makes it wait for every bucket. The communication stream runs its
/// buckets in order, so waiting for one joins every earlier one too. Without a
/// communicator of several ranks the step is the copy alone and no second
/// stream is needed. The communicator must reduce device buffers (NCCL).
class DeviceCollectives {
public:
  /// Whether running `plan` with `communicator` reduces across ranks, and so
  /// needs a communication stream and eventsNeeded(plan) events.
  static bool needsStream(const LaunchPlan &plan, const dist::Communicator *communicator);
  /// Two events per collective step (its start and end on the communication
  /// stream), and one the compute stream records for it to wait on.
  static size_t eventsNeeded(const LaunchPlan &plan);

  /// `communication` and `events` are unused (may be empty) when needsStream()
  /// is false; `events` are the run context's, reused by every run. With
  /// `timed`, each bucket's start is recorded too, for profile().
  DeviceCollectives(const LaunchPlan &plan, dist::Communicator *communicator, Device &device,
                    Stream compute, Stream communication, std::span<const Event> events,
                    bool timed = false);

  /// Step `stepIndex` (an AllReduce): the copy on the compute stream, the
  /// collective on the communication stream.
  Expected<void> start(int stepIndex, DevicePtr source, DevicePtr result);
  /// Makes the compute stream wait for the buckets in flight whose result
  /// shares bytes with one of `ranges`.
  Expected<void> waitForOverlap(std::span<const DeviceRange> ranges);
  /// Makes the compute stream wait for every bucket in flight.
  Expected<void> finish();
  /// Whether a bucket was enqueued that the compute stream has not waited for.
  bool inFlight() const { return joined_ < buckets_.size(); }
  /// A timed run, once its streams have finished: one Communication event per
  /// bucket, timed by the device from `runStart` (an event of the run's).
  Expected<void> profile(RunProfile &profile, Event runStart) const;

private:
  struct Bucket {
    int step = -1;
    DeviceRange result;
    int64_t elements = 0;
    Event started; ///< recorded on the communication stream before the collective (timed)
    Event done;    ///< recorded on the communication stream after the collective
  };
  /// The compute stream waits for buckets [joined_, last].
  Expected<void> joinThrough(size_t last);

  const LaunchPlan &plan_;
  dist::Communicator *communicator_;
  Device &device_;
  Stream compute_, communication_;
  std::span<const Event> events_;
  bool timed_;
  std::vector<int> ordinals_; ///< by step: the step's collective ordinal
  std::vector<Bucket> buckets_;
  size_t joined_ = 0; ///< buckets before this one the compute stream has waited for
};

/// Whether a plan has a collective step (a launch graph cannot replay one: the
/// communicator's calls must happen on every run).
bool hasCollectiveSteps(const LaunchPlan &plan);

/// "all_reduce bucket K": a collective step's name in profiles and traces, K
/// counting the plan's collective steps from 0 (bucket 0 is the first reduced).
std::string collectiveEventName(int ordinal);

} // namespace kiln::runtime
