// The device executor's all_reduce steps on hand-written plans, on the
// simulator device behind lazy streams: the collective is enqueued on a
// communication stream, the kernels that do not touch its bucket are enqueued
// before it completes, the kernel that reads it (and the copy out) wait for it,
// and a failed collective is run()'s error.
#include "runtime/DeviceExecutor.h"
#include "runtime/sim/SimDevice.h"

#include "SmallPlans.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;
using runtime::DevicePtr;
using runtime::Event;
using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;
using runtime::Stream;

namespace {

/// The simulator device with lazy streams, and a log of what was enqueued
/// where. Work deferred on a stream (a collective) runs only once something
/// must see it: later work on the same stream, a wait on an event recorded
/// after it, or a synchronize. That is the latest a real device may finish
/// it, so a kernel that reads a bucket the executor did not wait for reads it
/// unreduced. Everything else runs at once, as on the simulator.
class LazyStreamDevice final : public runtime::Device {
public:
  explicit LazyStreamDevice(std::shared_ptr<sim::SimDevice> sim) : sim_(std::move(sim)) {
    streamNames_[nullptr] = "the default stream";
  }

  const std::vector<std::string> &log() const { return log_; }
  void clearLog() { log_.clear(); }
  std::string name(Stream stream) const { return streamNames_.at(stream.handle); }
  int64_t streams() const { return static_cast<int64_t>(streamNames_.size()) - 1; }

  /// Enqueues `work` on `stream`, to run as late as stream order allows.
  void defer(Stream stream, std::string what, std::function<void()> work) {
    pending_[stream.handle].push_back({std::move(what), std::move(work), std::nullopt});
  }
  /// Runs a kernel on `stream` after the stream's deferred work.
  Expected<void> launch(Stream stream, const std::string &kernel,
                        sim::SimDevice::Operation operation) {
    KILN_TRY_VOID(flush(stream.handle));
    log_.push_back(fmt::format("launch {} on {}", kernel, name(stream)));
    return sim_->enqueue(stream, std::move(operation));
  }

  std::string describe() const override { return "lazy " + sim_->describe(); }
  runtime::DevicePeak peak() const override { return {}; }
  Expected<DevicePtr> allocate(int64_t bytes) override { return sim_->allocate(bytes); }
  void free(DevicePtr ptr) override { sim_->free(ptr); }
  Expected<void *> allocatePinned(int64_t bytes) override { return sim_->allocatePinned(bytes); }
  void freePinned(void *ptr) override { sim_->freePinned(ptr); }

  Expected<Stream> createStream() override {
    KILN_TRY(Stream stream, sim_->createStream());
    streamNames_[stream.handle] = fmt::format("stream {}", streamCount_++);
    return stream;
  }
  void destroyStream(Stream stream) override {
    (void)flush(stream.handle);
    streamNames_.erase(stream.handle);
    sim_->destroyStream(stream);
  }
  Expected<void> synchronize(Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    return sim_->synchronize(stream);
  }

  Expected<void> copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                              Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    return sim_->copyToDevice(dst, src, bytes, stream);
  }
  Expected<void> copyToHost(void *dst, DevicePtr src, int64_t bytes, Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    log_.push_back(fmt::format("copy to host on {}", name(stream)));
    return sim_->copyToHost(dst, src, bytes, stream);
  }
  Expected<void> copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                              Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    log_.push_back(fmt::format("copy on {}", name(stream)));
    return sim_->copyOnDevice(dst, src, bytes, stream);
  }
  Expected<void> fill(DevicePtr dst, uint8_t value, int64_t bytes, Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    return sim_->fill(dst, value, bytes, stream);
  }

  Expected<Event> createEvent() override {
    KILN_TRY(Event event, sim_->createEvent());
    eventNames_[event.handle] = fmt::format("event {}", eventCount_++);
    return event;
  }
  void destroyEvent(Event event) override {
    eventNames_.erase(event.handle);
    sim_->destroyEvent(event);
  }
  Expected<void> record(Event event, Stream stream) override {
    log_.push_back(fmt::format("record {} on {}", eventNames_.at(event.handle), name(stream)));
    auto &queue = pending_[stream.handle];
    if (queue.empty())
      return sim_->record(event, stream);
    // Recorded once the deferred work before it has run.
    queue.push_back({"", nullptr, event});
    return {};
  }
  Expected<void> waitEvent(Stream stream, Event event) override {
    log_.push_back(fmt::format("wait {} for {}", name(stream), eventNames_.at(event.handle)));
    for (auto &[handle, queue] : pending_)
      if (std::ranges::any_of(queue, [&](const Pending &p) {
            return p.marker && p.marker->handle == event.handle;
          }))
        KILN_TRY_VOID(flush(handle, event.handle));
    return sim_->waitEvent(stream, event);
  }
  Expected<bool> eventDone(Event event) override {
    for (auto &[handle, queue] : pending_)
      for (const Pending &p : queue)
        if (p.marker && p.marker->handle == event.handle)
          return false;
    return sim_->eventDone(event);
  }
  Expected<double> elapsedMs(Event start, Event end) override {
    return sim_->elapsedMs(start, end);
  }

  Expected<void> beginCapture(Stream stream) override { return sim_->beginCapture(stream); }
  Expected<runtime::GraphExec> endCapture(Stream stream) override {
    return sim_->endCapture(stream);
  }
  Expected<void> launchGraph(runtime::GraphExec graph, Stream stream) override {
    KILN_TRY_VOID(flush(stream.handle));
    return sim_->launchGraph(graph, stream);
  }
  void destroyGraph(runtime::GraphExec graph) override { sim_->destroyGraph(graph); }

private:
  struct Pending {
    std::string what;
    std::function<void()> work;
    std::optional<Event> marker; ///< an event recorded behind the work
  };

  /// Runs `stream`'s deferred work, up to and including the record of
  /// `through` (everything when null).
  Expected<void> flush(void *stream, void *through = nullptr) {
    auto &queue = pending_[stream];
    while (!queue.empty()) {
      Pending next = std::move(queue.front());
      queue.pop_front();
      if (next.marker) {
        KILN_TRY_VOID(sim_->record(*next.marker, Stream{stream}));
        if (next.marker->handle == through)
          return {};
      } else {
        next.work();
        log_.push_back(fmt::format("ran {} on {}", next.what, name(Stream{stream})));
      }
    }
    return {};
  }

  std::shared_ptr<sim::SimDevice> sim_;
  std::map<void *, std::string> streamNames_, eventNames_;
  std::map<void *, std::deque<Pending>> pending_;
  int streamCount_ = 0, eventCount_ = 0;
  std::vector<std::string> log_;
};

/// out = scale * in (+ other, with three buffers): host code on simulator
/// memory, launched through the lazy device.
class TestKernel final : public runtime::DeviceKernel {
public:
  TestKernel(std::string name, float scale, int inputs, LazyStreamDevice &device)
      : name_(std::move(name)), scale_(scale), inputs_(inputs), device_(device) {}
  const std::string &name() const override { return name_; }
  Expected<void> launch(const DevicePtr *args, Stream stream) const override {
    std::vector<DevicePtr> buffers(args, args + inputs_ + 1);
    return device_.launch(stream, name_, [this, buffers]() -> Expected<void> {
      auto at = [&](int i) { return reinterpret_cast<float *>(buffers[static_cast<size_t>(i)]); };
      for (int64_t i = 0; i < kN; ++i)
        at(inputs_)[i] = scale_ * at(0)[i] + (inputs_ == 2 ? at(1)[i] : 0.0f);
      return {};
    });
  }

private:
  std::string name_;
  float scale_;
  int inputs_;
  LazyStreamDevice &device_;
};

/// Stands for 2 ranks holding the same tensor: a sum doubles it, deferred on
/// the stream it is given. Call number `failing` (from 0) fails instead, as a
/// dead peer would.
class LazyCommunicator final : public runtime::dist::Communicator {
public:
  explicit LazyCommunicator(LazyStreamDevice &device, int failing = -1)
      : device_(device), failing_(failing) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  runtime::dist::MemorySpace memorySpace() const override {
    return runtime::dist::MemorySpace::Device;
  }
  std::string_view backendName() const override { return "lazy"; }
  Expected<void> allReduce(void *data, int64_t count, DType, runtime::dist::ReduceOp,
                           Stream stream) override {
    int call = calls_++;
    if (call == failing_)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("allReduce #{} ({} f32, sum) on rank 0 of 2 (lazy) failed: "
                                   "rank 1 aborted",
                                   call, count));
    device_.defer(stream, fmt::format("allReduce {}", call), [data, count] {
      for (int64_t i = 0; i < count; ++i)
        static_cast<float *>(data)[i] *= 2;
    });
    return {};
  }
  Expected<void> broadcast(void *, int64_t, DType, int, Stream) override { return {}; }
  Expected<void> barrier() override { return {}; }
  void abort() override {}
  bool aborted() const override { return false; }
  Expected<void> synchronize(Stream) override {
    ++synchronized;
    return {};
  }
  int synchronized = 0;

private:
  LazyStreamDevice &device_;
  int failing_;
  int calls_ = 0;
};

runtime::PlanStep kernelStep(std::string name, float scale, std::vector<int> args,
                             LazyStreamDevice &device) {
  int inputs = static_cast<int>(args.size()) - 1;
  auto kernel = std::make_shared<TestKernel>(name, scale, inputs, device);
  return {std::move(name), runtime::KernelEntry::device(std::move(kernel)), std::move(args)};
}

runtime::PlanStep reduceStep(std::string name, int source, int result) {
  runtime::PlanStep step{std::move(name), {}, {source, result}};
  step.kind = runtime::StepKind::AllReduce;
  return step;
}

/// grad = 2x; sum = all_reduce(grad); other = 3x (touches no bucket);
/// y = sum_view + other (the update: reads the bucket through an alias, so
/// only the addresses say it is the bucket). With `buckets` 2, a second
/// bucket reduces `other` before the update.
LaunchPlan makePlan(LazyStreamDevice &device, int buckets = 1) {
  LaunchPlan plan;
  PlanBuffer view = f32Buffer("sum_view", Storage::Alias);
  view.aliasOf = 2;
  plan.buffers = {f32Buffer("x", Storage::Input, 0),
                  f32Buffer("grad", Storage::Arena, -1, 0),
                  f32Buffer("sum", Storage::Arena, -1, 64),
                  f32Buffer("other", Storage::Arena, -1, 128),
                  f32Buffer("y", Storage::Output, 0),
                  f32Buffer("other_sum", Storage::Arena, -1, 192),
                  view};
  plan.steps = {kernelStep("grad", 2, {0, 1}, device), reduceStep("sum", 1, 2),
                kernelStep("other", 3, {0, 3}, device)};
  if (buckets == 2) {
    plan.steps.push_back(reduceStep("other_sum", 3, 5));
    plan.steps.push_back(kernelStep("update", 1, {6, 5, 4}, device));
  } else {
    plan.steps.push_back(kernelStep("update", 1, {6, 3, 4}, device));
  }
  plan.inputs = {{"x", 0}};
  plan.outputs = {{"y", 4}};
  plan.arenaBytes = 256;
  return plan;
}

/// grad = 2x; y = all_reduce(grad), an output no kernel reads: only the
/// run's final wait orders the copy out after the collective.
LaunchPlan makeOutputBucketPlan(LazyStreamDevice &device) {
  LaunchPlan plan;
  plan.buffers = {f32Buffer("x", Storage::Input, 0), f32Buffer("grad", Storage::Arena, -1, 0),
                  f32Buffer("y", Storage::Output, 0)};
  plan.steps = {kernelStep("grad", 2, {0, 1}, device), reduceStep("y", 1, 2)};
  plan.inputs = {{"x", 0}};
  plan.outputs = {{"y", 2}};
  plan.arenaBytes = 64;
  return plan;
}

/// An executor for `plan` on `device`, and one run of it.
struct Harness {
  std::shared_ptr<LazyStreamDevice> device =
      std::make_shared<LazyStreamDevice>(std::make_shared<sim::SimDevice>());
  std::shared_ptr<runtime::DeviceMemoryPool> pool =
      std::make_shared<runtime::DeviceMemoryPool>(*device);
  LaunchPlan plan;
  std::unique_ptr<runtime::DeviceExecutor> executor;
  HostTensor x = smallInput();

  void build(LaunchPlan madePlan) {
    plan = std::move(madePlan);
    auto made = runtime::DeviceExecutor::create(plan, device, pool);
    REQUIRE(made);
    executor = std::move(*made);
  }
  Expected<std::vector<HostTensor>> run(runtime::dist::Communicator *communicator,
                                        runtime::RunProfile *profile = nullptr) {
    device->clearLog();
    std::vector<const HostTensor *> inputs{&x};
    RunOptions options;
    options.communicator = communicator;
    options.profile = profile;
    return executor->run(plan, inputs, {}, options);
  }
  /// The position of the first log entry that starts with `prefix`.
  ptrdiff_t at(const std::string &prefix) const {
    const auto &log = device->log();
    auto found = std::ranges::find_if(log, [&](const std::string &entry) {
      return entry.starts_with(prefix);
    });
    INFO("no log entry starts with '" << prefix << "'");
    REQUIRE(found != log.end());
    return found - log.begin();
  }
};

std::string joined(const std::vector<std::string> &log) {
  std::string text;
  for (const std::string &entry : log)
    text += entry + "\n";
  return text;
}

} // namespace

TEST_CASE("a device all-reduce runs on a communication stream beside the kernels",
          "[runtime][dist]") {
  Harness h;
  h.build(makePlan(*h.device));
  LazyCommunicator communicator(*h.device);
  auto out = h.run(&communicator);
  REQUIRE(out);
  const auto &log = h.device->log();
  INFO(joined(log));
  // The compute stream is the one the kernels run on; the collective got another.
  std::string compute = "stream 0", communication = "stream 1";
  CHECK(log[h.at("launch grad")] == "launch grad on " + compute);
  CHECK(log[h.at("ran allReduce 0")] == "ran allReduce 0 on " + communication);
  // The fork: the copy into the bucket, an event behind it on the compute
  // stream, the communication stream waiting on that event.
  ptrdiff_t copy = h.at("copy on " + compute);
  CHECK(log[copy + 1].starts_with("record event"));
  CHECK(log[copy + 1].ends_with("on " + compute));
  std::string ready = log[copy + 1].substr(7, log[copy + 1].find(" on ") - 7);
  CHECK(log[copy + 2] == fmt::format("wait {} for {}", communication, ready));
  // 'other' touches no bucket: it is enqueued while the bucket is in flight.
  // The update reads it (through an alias): the compute stream waits first.
  CHECK(h.at("launch other") < h.at("ran allReduce 0"));
  CHECK(h.at("wait " + compute) < h.at("launch update"));
  CHECK(h.at("ran allReduce 0") < h.at("launch update"));
  // The update read the sum: y = 2 * (2x) + 3x.
  for (int64_t i = 0; i < kN; ++i)
    CHECK(out->at(0).getDouble(i) == 7 * (static_cast<double>(i) + 0.5));
  CHECK(communicator.synchronized == 1);

  // One communication stream per run context, made once.
  CHECK(h.device->streams() == 2);
  REQUIRE(h.run(&communicator));
  CHECK(h.device->streams() == 2);
}

TEST_CASE("a device kernel that reads a later bucket waits for every bucket before it",
          "[runtime][dist]") {
  Harness h;
  h.build(makePlan(*h.device, 2));
  LazyCommunicator communicator(*h.device);
  auto out = h.run(&communicator);
  REQUIRE(out);
  INFO(joined(h.device->log()));
  // One wait on the last overlapping bucket joins both (the communication
  // stream runs them in order).
  CHECK(h.at("launch other") < h.at("ran allReduce 0"));
  CHECK(h.at("ran allReduce 1") < h.at("launch update"));
  CHECK(std::ranges::count_if(h.device->log(), [](const std::string &entry) {
          return entry.starts_with("wait stream 0");
        }) == 1);
  for (int64_t i = 0; i < kN; ++i)
    CHECK(out->at(0).getDouble(i) == 10 * (static_cast<double>(i) + 0.5));
}

TEST_CASE("a device run waits for its buckets before it copies the outputs out",
          "[runtime][dist]") {
  Harness h;
  h.build(makeOutputBucketPlan(*h.device));
  LazyCommunicator communicator(*h.device);
  auto out = h.run(&communicator);
  REQUIRE(out);
  INFO(joined(h.device->log()));
  CHECK(h.at("ran allReduce 0") < h.at("copy to host"));
  for (int64_t i = 0; i < kN; ++i)
    CHECK(out->at(0).getDouble(i) == 4 * (static_cast<double>(i) + 0.5));
}

TEST_CASE("a failed device all-reduce is run()'s error", "[runtime][dist]") {
  Harness h;
  h.build(makePlan(*h.device, 2));
  // Bucket 1 fails to start while bucket 0 is in flight: the run joins
  // bucket 0 and waits through the communicator before it gives the context back.
  LazyCommunicator failing(*h.device, /*failing=*/1);
  auto failed = h.run(&failing);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code() == ErrorCode::Unavailable);
  CHECK(failed.error().message() == "all_reduce step 'other_sum': allReduce #1 (5 f32, sum) on "
                                    "rank 0 of 2 (lazy) failed: rank 1 aborted");
  INFO(joined(h.device->log()));
  CHECK(std::ranges::find(h.device->log(), "launch update on stream 0") == h.device->log().end());
  CHECK(h.at("ran allReduce 0") >= 0);
  CHECK(failing.synchronized == 1);
  // The context is reused: the next run reduces both buckets.
  LazyCommunicator working(*h.device);
  auto again = h.run(&working);
  REQUIRE(again);
  CHECK(again->at(0).getDouble(1) == 15);
}

TEST_CASE("a profiled device run times each bucket on the communication stream",
          "[runtime][dist]") {
  Harness h;
  h.build(makePlan(*h.device, 2));
  LazyCommunicator communicator(*h.device);
  runtime::RunProfile profile;
  auto out = h.run(&communicator, &profile);
  REQUIRE(out);
  CHECK(out->at(0).getDouble(0) == 5); // 2 * 2x + 2 * 3x at x = 0.5
  std::vector<const runtime::ProfileEvent *> buckets;
  for (const runtime::ProfileEvent &event : profile.events)
    if (event.category == runtime::ProfileCategory::Communication)
      buckets.push_back(&event);
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0]->name == "all_reduce bucket 0");
  CHECK(buckets[0]->step == 1);
  CHECK(buckets[1]->name == "all_reduce bucket 1");
  CHECK(buckets[1]->step == 3);
  for (const runtime::ProfileEvent *bucket : buckets) {
    CHECK(bucket->bytes == kN * 4);
    CHECK(bucket->elements == kN);
    CHECK(bucket->startMs >= 0);
    CHECK(bucket->durationMs >= 0);
  }
  // Bucket 1 starts after bucket 0 ends: one communication stream, in order.
  CHECK(buckets[1]->startMs >= buckets[0]->startMs + buckets[0]->durationMs);
}

TEST_CASE("a device run without several ranks copies on the compute stream alone",
          "[runtime][dist]") {
  Harness h;
  h.build(makePlan(*h.device));
  auto alone = h.run(nullptr);
  REQUIRE(alone);
  CHECK(alone->at(0).getDouble(0) == 2.5); // 2x + 3x at x = 0.5
  CHECK(h.device->streams() == 1);
  for (const std::string &entry : h.device->log())
    CHECK((!entry.contains(" on ") || entry.ends_with("on stream 0")));
}
