// Chrome trace-event JSON of profiled runs, and its write through a
// temporary file renamed into place.
#include "runtime/ChromeTrace.h"

#include "runtime/cache/AtomicFile.h"
#include "support/Json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::runtime {

namespace {

/// The trace's threads: one lane for whole runs, one for kernels (and
/// launch-graph replays), one for copies, one for the communication thread's
/// collectives. The last one's name and events ("communication", cat "comm",
/// "all_reduce bucket K" with bytes and elements) are a contract: tools that
/// measure overlap read them (docs/profiling.md).
constexpr int kProcessId = 1;
constexpr int kRunsThread = 0;
constexpr int kKernelsThread = 1;
constexpr int kCopiesThread = 2;
constexpr int kCommunicationThread = 3;

/// Microseconds with nanosecond digits: a CPU kernel can take under 1 us.
std::string microseconds(double ms) { return fmt::format("{:.3f}", ms * 1e3); }

/// JSON has no NaN or infinity; a rate over zero time is left out instead.
void appendRate(std::string &args, const char *key, double amount, double ms, double scale) {
  if (ms <= 0)
    return;
  double rate = amount / (ms * 1e-3) / scale;
  if (std::isfinite(rate))
    args += fmt::format(",\"{}\":{:.3f}", key, rate);
}

std::string_view categoryName(ProfileCategory category) {
  switch (category) {
  case ProfileCategory::Kernel: return "kernel";
  case ProfileCategory::CopyToDevice: return "copy_to_device";
  case ProfileCategory::CopyToHost: return "copy_to_host";
  case ProfileCategory::Graph: return "graph";
  case ProfileCategory::Communication: return "comm";
  }
  return "event";
}

int threadOf(ProfileCategory category) {
  switch (category) {
  case ProfileCategory::CopyToDevice:
  case ProfileCategory::CopyToHost: return kCopiesThread;
  case ProfileCategory::Communication: return kCommunicationThread;
  case ProfileCategory::Kernel:
  case ProfileCategory::Graph: return kKernelsThread;
  }
  return kKernelsThread;
}

std::string metadataEvent(const char *what, int thread, std::string_view name) {
  return fmt::format("{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                     what, kProcessId, thread, json::quote(name));
}

std::string completeEvent(std::string_view name, std::string_view category, double startMs,
                          double durationMs, int thread, const std::string &args) {
  return fmt::format("{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},"
                     "\"tid\":{},\"args\":{{{}}}}}",
                     json::quote(name), category, microseconds(startMs),
                     microseconds(std::max(durationMs, 0.0)), kProcessId, thread, args);
}

/// The work an event did: a kernel's step's counts, the plan's for a graph
/// replay, a copy's bytes.
std::string eventArgs(const ProfileEvent &event, std::span<const PlanStep> steps) {
  int64_t flops = 0, bytes = event.bytes;
  std::string args;
  if (event.category == ProfileCategory::Kernel) {
    args = fmt::format("\"step\":{}", event.step);
    if (event.step >= 0 && static_cast<size_t>(event.step) < steps.size()) {
      flops = steps[event.step].flops;
      bytes = steps[event.step].bytesMoved;
    }
  } else if (event.category == ProfileCategory::Graph) {
    args = fmt::format("\"kernels\":{}", steps.size());
    bytes = 0;
    for (const PlanStep &step : steps) {
      flops += step.flops;
      bytes += step.bytesMoved;
    }
  }
  if (event.category == ProfileCategory::Communication)
    return fmt::format("\"step\":{},\"bytes\":{},\"elements\":{}", event.step, event.bytes,
                       event.elements);
  if (!args.empty())
    args += ",";
  args += fmt::format("\"bytes\":{}", bytes);
  if (event.category == ProfileCategory::Kernel || event.category == ProfileCategory::Graph)
    args += fmt::format(",\"flops\":{}", flops);
  appendRate(args, "GB/s", static_cast<double>(bytes), event.durationMs, 1e9);
  if (event.category == ProfileCategory::Kernel || event.category == ProfileCategory::Graph)
    appendRate(args, "GFLOP/s", static_cast<double>(flops), event.durationMs, 1e9);
  return args;
}

} // namespace

std::string chromeTraceJson(std::span<const RunProfile> runs, std::span<const PlanStep> steps) {
  std::vector<std::string> events;
  std::string device = runs.empty() ? std::string() : runs.front().device;
  events.push_back(metadataEvent("process_name", kRunsThread,
                                 device.empty() ? std::string("kiln") : "kiln: " + device));
  events.push_back(metadataEvent("thread_name", kRunsThread, "runs"));
  events.push_back(metadataEvent("thread_name", kKernelsThread, "kernels"));
  events.push_back(metadataEvent("thread_name", kCopiesThread, "copies"));
  bool communicates = std::ranges::any_of(runs, [](const RunProfile &run) {
    return std::ranges::any_of(run.events, [](const ProfileEvent &event) {
      return event.category == ProfileCategory::Communication;
    });
  });
  if (communicates)
    events.push_back(metadataEvent("thread_name", kCommunicationThread, "communication"));
  // Each run's events are timed from its own start; runs follow one another.
  double runStartMs = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunProfile &run = runs[r];
    double runEndMs = run.totalMs;
    for (const ProfileEvent &event : run.events)
      runEndMs = std::max(runEndMs, event.startMs + event.durationMs);
    events.push_back(completeEvent(fmt::format("run {}", r), "run", runStartMs, runEndMs,
                                   kRunsThread, fmt::format("\"events\":{}", run.events.size())));
    for (const ProfileEvent &event : run.events) {
      events.push_back(completeEvent(event.name, categoryName(event.category),
                                     runStartMs + event.startMs, event.durationMs,
                                     threadOf(event.category), eventArgs(event, steps)));
    }
    runStartMs += runEndMs;
  }
  return fmt::format("{{\"traceEvents\":[\n{}\n],\"displayTimeUnit\":\"ms\"}}\n",
                     fmt::join(events, ",\n"));
}

Expected<void> writeChromeTrace(const std::string &path, std::span<const RunProfile> runs,
                                std::span<const PlanStep> steps) {
  return replaceFile(path, chromeTraceJson(runs, steps), "profile trace");
}

} // namespace kiln::runtime
