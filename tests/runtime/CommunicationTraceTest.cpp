// The communication track of the Chrome trace and the hidden-communication
// figure, on hand-made profiles: a host run's kernels with collectives beside
// them.
#include "StrictJson.h"

#include "runtime/ChromeTrace.h"
#include "runtime/CommunicationOverlap.h"
#include "runtime/ProfileReport.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <set>
#include <span>
#include <string>
#include <vector>

using namespace kiln;
using runtime::ProfileCategory;
using runtime::ProfileEvent;
using runtime::RunProfile;

namespace {

ProfileEvent kernel(std::string name, int step, double startMs, double durationMs) {
  return {std::move(name), ProfileCategory::Kernel, step, startMs, durationMs, 0};
}

ProfileEvent collective(int bucket, int step, double startMs, double durationMs, int64_t elements) {
  return {fmt::format("all_reduce bucket {}", bucket), ProfileCategory::Communication, step,
          startMs, durationMs, elements * 4, elements};
}

/// Kernels over [0, 2), [3, 4) and [4.5, 10) ms; bucket 0 over [1, 5) (2.5 ms
/// of it under kernels), bucket 1 over [10, 12) (none).
RunProfile oneStep() {
  RunProfile run;
  run.device = "cpu";
  run.totalMs = 12;
  run.events = {kernel("k0", 0, 0, 2), kernel("k2", 2, 3, 1), kernel("k3", 3, 4.5, 5.5),
                kernel("g1_all_reduce", 1, 2, 0), collective(0, 1, 1, 4, 6),
                collective(1, 4, 10, 2, 3)};
  return run;
}

} // namespace

TEST_CASE("the hidden fraction is the collectives' time under kernels", "[runtime][dist]") {
  std::vector<RunProfile> runs = {oneStep()};
  runtime::CommunicationOverlap overlap = runtime::measureCommunicationOverlap(runs);
  CHECK(overlap.collectives == 2);
  CHECK(overlap.communicationMs == Approx(6));
  CHECK(overlap.hiddenMs == Approx(2.5));
  CHECK(*overlap.hiddenFraction() == Approx(2.5 / 6));

  // Overlapping kernels count once; each run is measured on its own clock.
  RunProfile second;
  second.events = {kernel("a", 0, 0, 3), kernel("b", 1, 1, 3), collective(0, 2, 0, 4, 1)};
  runs.push_back(second);
  overlap = runtime::measureCommunicationOverlap(runs);
  CHECK(overlap.collectives == 3);
  CHECK(overlap.communicationMs == Approx(10));
  CHECK(overlap.hiddenMs == Approx(2.5 + 4));

  // No collectives: no fraction.
  RunProfile quiet;
  quiet.events = {kernel("a", 0, 0, 3)};
  CHECK_FALSE(runtime::measureCommunicationOverlap(std::span(&quiet, 1)).hiddenFraction());
}

TEST_CASE("the profile table reports the collectives and how much of them was hidden",
          "[runtime][dist]") {
  std::vector<RunProfile> runs = {oneStep()};
  runtime::ProfileSummary summary = runtime::summarizeProfiles(runs, {}, {});
  // Collectives are not kernels: the kernel rows and time leave them out.
  CHECK(summary.kernels.size() == 4);
  CHECK(summary.kernelMs == Approx(8.5));
  std::string table = runtime::formatProfileTable(summary);
  CHECK_THAT(table, Catch::Contains("comm:    6.000 ms in 2 all-reduces, 41.7% hidden behind "
                                    "kernels (3.500 ms exposed)\n"));
  RunProfile quiet;
  quiet.events = {kernel("a", 0, 0, 3)};
  CHECK_THAT(runtime::formatProfileTable(runtime::summarizeProfiles(std::span(&quiet, 1), {}, {})),
             !Catch::Contains("comm:"));
}

TEST_CASE("the trace has a communication thread with one event per bucket", "[runtime][dist]") {
  std::vector<RunProfile> runs = {oneStep(), oneStep()};
  std::optional<test::Json> json = test::StrictJsonParser::parse(runtime::chromeTraceJson(runs, {}));
  REQUIRE(json);
  int communicationThread = -1;
  std::set<int> otherThreads;
  for (const test::Json &event : (*json)["traceEvents"].elements)
    if (event["ph"].string == "M" && event["name"].string == "thread_name") {
      if (event["args"]["name"].string == "communication")
        communicationThread = static_cast<int>(event["tid"].number);
      else
        otherThreads.insert(static_cast<int>(event["tid"].number));
    }
  REQUIRE(communicationThread >= 0);
  CHECK_FALSE(otherThreads.contains(communicationThread));

  std::vector<std::string> names;
  std::vector<double> starts;
  for (const test::Json &event : (*json)["traceEvents"].elements) {
    if (event["ph"].string != "X" || event["cat"].string != "comm")
      continue;
    CHECK(static_cast<int>(event["tid"].number) == communicationThread);
    names.push_back(event["name"].string);
    starts.push_back(event["ts"].number);
    const test::Json &args = event["args"];
    int64_t elements = names.back() == "all_reduce bucket 0" ? 6 : 3;
    CHECK(args["elements"].number == elements);
    CHECK(args["bytes"].number == elements * 4);
  }
  // One per bucket per run; the second run's start where the first ended.
  CHECK(names == std::vector<std::string>{"all_reduce bucket 0", "all_reduce bucket 1",
                                          "all_reduce bucket 0", "all_reduce bucket 1"});
  CHECK(starts == std::vector<double>{1000, 10000, 13000, 22000});

  // Runs without collectives: no communication thread.
  RunProfile quiet;
  quiet.events = {kernel("a", 0, 0, 3)};
  CHECK_THAT(runtime::chromeTraceJson(std::span(&quiet, 1), {}),
             !Catch::Contains("communication"));
}
