// The host run loop's all_reduce steps on hand-written plans: a bucket is
// reduced on the communication thread while the kernels that do not read it
// run, the kernel that reads it waits, a failed collective is run()'s error,
// and the thread exists only for a model that reduces across ranks.
#include "runtime/CompiledModel.h"

#include "SmallPlans.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;
using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

namespace {

/// What ran, in order: kernels by name, the communicator's calls.
class EventLog {
public:
  void add(std::string event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
    changed_.notify_all();
  }
  /// Waits at most `timeout` for `event`; whether it came.
  bool waitFor(const std::string &event, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return contains(event); });
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }

private:
  bool contains(const std::string &event) const {
    return std::find(events_.begin(), events_.end(), event) != events_.end();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> events_;
};

/// out = scale * in (+ other, with three buffers), logged once done.
class LoggedKernel final : public runtime::KernelInvoker {
public:
  LoggedKernel(std::string name, float scale, EventLog &log)
      : name_(std::move(name)), scale_(scale), log_(log) {}
  Expected<void> invoke(void *const *args) const override {
    auto *in = static_cast<const float *>(args[0]);
    bool sum = name_ == "update";
    auto *other = sum ? static_cast<const float *>(args[1]) : nullptr;
    auto *out = static_cast<float *>(args[sum ? 2 : 1]);
    for (int64_t i = 0; i < kN; ++i)
      out[i] = scale_ * in[i] + (other ? other[i] : 0.0f);
    log_.add(name_);
    return {};
  }

private:
  std::string name_;
  float scale_;
  EventLog &log_;
};

/// Stands for 2 ranks holding the same tensor: a sum doubles it. Before it
/// sums, it waits for the log to show `awaited` (bounded: without overlap the
/// compute thread is blocked in this call and never runs it). Call number
/// `failing` (from 0) fails instead, as a dead peer would.
class RecordingCommunicator final : public runtime::dist::Communicator {
public:
  RecordingCommunicator(EventLog &log, std::string awaited, int failing = -1)
      : log_(log), awaited_(std::move(awaited)), failing_(failing) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  runtime::dist::MemorySpace memorySpace() const override {
    return runtime::dist::MemorySpace::Host;
  }
  std::string_view backendName() const override { return "recording"; }
  Expected<void> allReduce(void *data, int64_t count, DType, runtime::dist::ReduceOp,
                           runtime::Stream) override {
    int call = calls_++;
    log_.add(fmt::format("allReduce {} begin", call));
    if (call == failing_)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("allReduce #{} ({} f32, sum) on rank 0 of 2 (recording) timed "
                                   "out: rank 1 did not arrive",
                                   call, count));
    if (!awaited_.empty() && !log_.waitFor(awaited_, std::chrono::seconds(10)))
      return makeError(ErrorCode::Unsupported,
                       fmt::format("'{}' did not run while allReduce {} was in flight", awaited_,
                                   call));
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] *= 2;
    log_.add(fmt::format("allReduce {} end", call));
    return {};
  }
  Expected<void> broadcast(void *, int64_t, DType, int, runtime::Stream) override { return {}; }
  Expected<void> barrier() override { return {}; }
  void abort() override {}
  bool aborted() const override { return false; }

private:
  EventLog &log_;
  std::string awaited_;
  int failing_;
  int calls_ = 0;
};

runtime::KernelEntry logged(std::string name, float scale, EventLog &log) {
  return runtime::KernelEntry::invoked(std::make_shared<LoggedKernel>(std::move(name), scale, log));
}

/// grad = 2x; sum = all_reduce(grad); other = 3x (reads no bucket);
/// y = sum + other (the update: reads the bucket). With `buckets` 2, a second
/// bucket reduces `other` too before the update.
LaunchPlan makePlan(EventLog &log, int buckets = 1) {
  LaunchPlan plan;
  plan.buffers = {
      f32Buffer("x", Storage::Input, 0),        f32Buffer("grad", Storage::Arena, -1, 0),
      f32Buffer("sum", Storage::Arena, -1, 64), f32Buffer("other", Storage::Arena, -1, 128),
      f32Buffer("y", Storage::Output, 0),       f32Buffer("other_sum", Storage::Arena, -1, 192)};
  runtime::PlanStep reduce{"sum", {}, {1, 2}};
  reduce.kind = runtime::StepKind::AllReduce;
  plan.steps = {{"grad", logged("grad", 2, log), {0, 1}}, reduce,
                {"other", logged("other", 3, log), {0, 3}}};
  if (buckets == 2) {
    runtime::PlanStep second{"other_sum", {}, {3, 5}};
    second.kind = runtime::StepKind::AllReduce;
    plan.steps.push_back(second);
    plan.steps.push_back({"update", logged("update", 1, log), {2, 5, 4}});
  } else {
    plan.steps.push_back({"update", logged("update", 1, log), {2, 3, 4}});
  }
  plan.inputs = {{"x", 0}};
  plan.outputs = {{"y", 4}};
  plan.arenaBytes = 256;
  return plan;
}

size_t threadCount() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                           std::filesystem::directory_iterator()));
}

} // namespace

TEST_CASE("a bucket's all-reduce overlaps the kernels that do not read it", "[runtime][dist]") {
  EventLog log;
  CompiledModel model(makePlan(log), nullptr);
  // The communicator sums only once 'other' has run: the compute thread must
  // have gone on past the all_reduce step while the bucket was in flight.
  RecordingCommunicator communicator(log, "other");
  runtime::RunProfile profile;
  auto out = model.run({{"x", smallInput()}}, {.profile = &profile, .communicator = &communicator});
  REQUIRE(out);
  // 'other' ran before the bucket finished (whether before or after the
  // thread picked it up), the update after.
  std::vector<std::string> events = log.events();
  auto at = [&](const std::string &event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  REQUIRE(events.size() == 5);
  CHECK(at("grad") == 0);
  CHECK(at("other") < at("allReduce 0 end"));
  CHECK(at("allReduce 0 end") < at("update"));
  // The update read the sum: y = 2 * (2x) + 3x.
  for (int64_t i = 0; i < kN; ++i)
    CHECK(out->at("y").getDouble(i) == 7 * (static_cast<double>(i) + 0.5));

  // The profile: one kernel event per step (the all_reduce step's is its
  // copy), then the collective, named by its bucket, with its size.
  std::vector<std::string> names;
  for (const runtime::ProfileEvent &event : profile.events)
    names.push_back(event.name);
  CHECK(names == std::vector<std::string>{"grad", "sum", "other", "update", "all_reduce bucket 0"});
  const runtime::ProfileEvent &collective = profile.events.back();
  CHECK(collective.category == runtime::ProfileCategory::Communication);
  CHECK(collective.step == 1);
  CHECK(collective.bytes == kN * 4);
  CHECK(collective.elements == kN);
  CHECK(collective.durationMs >= 0);
}

TEST_CASE("a kernel that reads a bucket waits for it", "[runtime][dist]") {
  // Two buckets: the second reduces 'other', which the update reads. Nothing
  // holds the collectives back, so only the wait keeps the update behind both.
  for (int round = 0; round < 20; ++round) {
    EventLog log;
    CompiledModel model(makePlan(log, 2), nullptr);
    RecordingCommunicator communicator(log, "");
    auto out = model.run({{"x", smallInput()}}, {.communicator = &communicator});
    REQUIRE(out);
    std::vector<std::string> events = log.events();
    REQUIRE(events.size() == 7);
    CHECK(events.back() == "update");
    for (int64_t i = 0; i < kN; ++i)
      CHECK(out->at("y").getDouble(i) == 10 * (static_cast<double>(i) + 0.5));
  }
}

TEST_CASE("a failed all-reduce on the communication thread is run()'s error", "[runtime][dist]") {
  EventLog log;
  {
    CompiledModel model(makePlan(log, 2), nullptr);
    RecordingCommunicator communicator(log, "", /*failing=*/1);
    auto failed = model.run({{"x", smallInput()}}, {.communicator = &communicator});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(failed.error().message(),
               Catch::StartsWith("all_reduce step 'other_sum': allReduce #1 (5 f32, sum) on "
                                 "rank 0 of 2 (recording) timed out: rank 1 did not arrive"));
    // The update never ran on a failed bucket.
    std::vector<std::string> events = log.events();
    CHECK(std::find(events.begin(), events.end(), "update") == events.end());
    // The next run calls the communicator again (calls 2 and 3 succeed).
    auto again = model.run({{"x", smallInput()}}, {.communicator = &communicator});
    REQUIRE(again);
    CHECK(again->at("y").getDouble(1) == 15);
    // A failure in the last run before the model goes: destruction joins.
    RecordingCommunicator failingFirst(log, "", /*failing=*/0);
    CHECK_FALSE(model.run({{"x", smallInput()}}, {.communicator = &failingFirst}));
  }
  SUCCEED("the model was destroyed: its communication thread was joined");
}

TEST_CASE("the communication thread starts with the first run that reduces across ranks",
          "[runtime][dist]") {
  EventLog log;
  size_t before = threadCount();
  {
    CompiledModel model(makePlan(log), nullptr);
    // No communicator: the step is a copy, on the calling thread.
    auto alone = model.run({{"x", smallInput()}});
    REQUIRE(alone);
    CHECK(alone->at("y").getDouble(0) == 2.5); // 2x + 3x at x = 0.5
    CHECK(threadCount() == before);
    RecordingCommunicator communicator(log, "");
    REQUIRE(model.run({{"x", smallInput()}}, {.communicator = &communicator}));
    CHECK(threadCount() == before + 1);
    REQUIRE(model.run({{"x", smallInput()}}, {.communicator = &communicator}));
    CHECK(threadCount() == before + 1); // one per model, reused
  }
  CHECK(threadCount() == before);
}
