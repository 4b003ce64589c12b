// The profile report on hand-made run profiles: per-kernel aggregation, rates
// and fractions of peak, the table, and the Chrome trace (valid JSON, escaped
// names, atomic write, errors naming the path).
#include "runtime/ChromeTrace.h"
#include "runtime/ProfileReport.h"

#include "StrictJson.h"
#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace kiln;
using runtime::ProfileCategory;
using runtime::ProfileEvent;
using runtime::RunProfile;

namespace {

runtime::PlanStep step(std::string name, int64_t flops, int64_t bytes) {
  runtime::PlanStep planned;
  planned.kernelName = std::move(name);
  planned.flops = flops;
  planned.bytesMoved = bytes;
  return planned;
}

ProfileEvent kernelEvent(std::string name, int stepIndex, double startMs, double durationMs) {
  return {std::move(name), ProfileCategory::Kernel, stepIndex, startMs, durationMs, 0};
}

/// Two steps: "gemm" does 2e8 FLOPs over 1e6 bytes, "copy" 1e3 FLOPs over 4e6 bytes.
std::vector<runtime::PlanStep> twoSteps() {
  return {step("gemm", 200'000'000, 1'000'000), step("copy", 1'000, 4'000'000)};
}

/// Run 0: gemm 1 ms, copy 0.5 ms, inputs copied in 0.1 ms (2 ms in all).
/// Run 1: gemm 3 ms, copy 0.5 ms (4 ms in all).
std::vector<RunProfile> twoRuns() {
  RunProfile first{"test device", 2.0, {}};
  first.events.push_back({"inputs", ProfileCategory::CopyToDevice, -1, 0.0, 0.1, 1'000'000});
  first.events.push_back(kernelEvent("gemm", 0, 0.1, 1.0));
  first.events.push_back(kernelEvent("copy", 1, 1.1, 0.5));
  RunProfile second{"test device", 4.0, {}};
  second.events.push_back(kernelEvent("gemm", 0, 0.0, 3.0));
  second.events.push_back(kernelEvent("copy", 1, 3.0, 0.5));
  return {first, second};
}

const runtime::DevicePeak kPeak{10e9, 100e9}; // 10 GB/s, 100 GFLOP/s

} // namespace

TEST_CASE("kernels aggregate over runs with rates and fractions of peak", "[profile]") {
  std::vector<runtime::PlanStep> steps = twoSteps();
  std::vector<RunProfile> runs = twoRuns();
  runtime::ProfileSummary summary = runtime::summarizeProfiles(runs, steps, kPeak);

  CHECK(summary.device == "test device");
  CHECK(summary.runs == 2);
  CHECK(summary.totalMs == Approx(6.0));
  CHECK(summary.kernelMs == Approx(5.0));
  CHECK(summary.copyMs == Approx(0.1));
  REQUIRE(summary.kernels.size() == 2);

  // By time descending: gemm (4 ms) before copy (1 ms).
  const runtime::KernelProfileRow &gemm = summary.kernels[0];
  CHECK(gemm.name == "gemm");
  CHECK(gemm.step == 0);
  CHECK(gemm.calls == 2);
  CHECK(gemm.totalMs == Approx(4.0));
  CHECK(gemm.meanMs == Approx(2.0));
  CHECK(gemm.fractionOfRun == Approx(4.0 / 6.0));
  // 2 calls x 1e6 bytes in 4 ms = 0.5 GB/s (5% of 10 GB/s);
  // 2 calls x 2e8 FLOPs in 4 ms = 100 GFLOP/s (100% of peak): compute.
  CHECK(gemm.bytesPerSecond == Approx(0.5e9));
  CHECK(gemm.flopsPerSecond == Approx(100e9));
  REQUIRE(gemm.fractionOfPeakBandwidth);
  REQUIRE(gemm.fractionOfPeakFlops);
  CHECK(*gemm.fractionOfPeakBandwidth == Approx(0.05));
  CHECK(*gemm.fractionOfPeakFlops == Approx(1.0));
  CHECK(gemm.bound == runtime::Bound::Compute);

  const runtime::KernelProfileRow &copy = summary.kernels[1];
  CHECK(copy.name == "copy");
  CHECK(copy.calls == 2);
  // 2 x 4e6 bytes in 1 ms = 8 GB/s (80%); 2e3 FLOPs in 1 ms = 2 MFLOP/s: memory.
  CHECK(copy.bytesPerSecond == Approx(8e9));
  CHECK(*copy.fractionOfPeakBandwidth == Approx(0.8));
  CHECK(*copy.fractionOfPeakFlops == Approx(2e6 / 100e9));
  CHECK(copy.bound == runtime::Bound::Memory);

  REQUIRE(summary.copies.size() == 1);
  const runtime::CopyProfileRow &inputs = summary.copies[0];
  CHECK(inputs.name == "inputs");
  CHECK(inputs.calls == 1);
  CHECK(inputs.bytes == 1'000'000);
  CHECK(inputs.bytesPerSecond == Approx(10e9)); // 1e6 bytes in 0.1 ms
  CHECK(*inputs.fractionOfPeakBandwidth == Approx(1.0));
}

TEST_CASE("kernel rows with equal time are ordered by step", "[profile]") {
  std::vector<runtime::PlanStep> steps = {step("a", 1, 1), step("b", 1, 1), step("c", 1, 1)};
  RunProfile run{"d", 3.0, {}};
  run.events.push_back(kernelEvent("c", 2, 0.0, 1.0));
  run.events.push_back(kernelEvent("a", 0, 1.0, 1.0));
  run.events.push_back(kernelEvent("b", 1, 2.0, 1.0));
  std::vector<RunProfile> runs = {run};
  runtime::ProfileSummary summary = runtime::summarizeProfiles(runs, steps, kPeak);
  REQUIRE(summary.kernels.size() == 3);
  CHECK(summary.kernels[0].name == "a");
  CHECK(summary.kernels[1].name == "b");
  CHECK(summary.kernels[2].name == "c");
}

TEST_CASE("an unknown peak leaves fractions and the bound unknown", "[profile]") {
  std::vector<runtime::PlanStep> steps = twoSteps();
  std::vector<RunProfile> runs = twoRuns();
  runtime::ProfileSummary summary = runtime::summarizeProfiles(runs, steps, {});
  for (const runtime::KernelProfileRow &row : summary.kernels) {
    CHECK_FALSE(row.fractionOfPeakBandwidth);
    CHECK_FALSE(row.fractionOfPeakFlops);
    CHECK(row.bound == runtime::Bound::Unknown);
    CHECK(row.bytesPerSecond > 0); // achieved rates need no peak
  }
  std::string table = runtime::formatProfileTable(summary);
  CHECK_THAT(table, Catch::Contains("memory bandwidth unknown, fp32 throughput unknown"));
}

TEST_CASE("a launch-graph replay counts the whole plan's work", "[profile]") {
  std::vector<runtime::PlanStep> steps = twoSteps();
  RunProfile run{"d", 2.0, {}};
  run.events.push_back({"graph", ProfileCategory::Graph, -1, 0.0, 1.0, 0});
  std::vector<RunProfile> runs = {run};
  runtime::ProfileSummary summary = runtime::summarizeProfiles(runs, steps, kPeak);
  REQUIRE(summary.kernels.size() == 1);
  CHECK(summary.kernels[0].step == -1);
  CHECK(summary.kernels[0].flopsPerCall == 200'001'000);
  CHECK(summary.kernels[0].bytesPerCall == 5'000'000);
  CHECK(summary.kernels[0].bytesPerSecond == Approx(5e9));
}

TEST_CASE("the profile table lists kernels, copies and the total", "[profile]") {
  std::vector<runtime::PlanStep> steps = twoSteps();
  std::vector<RunProfile> runs = twoRuns();
  std::string table =
      runtime::formatProfileTable(runtime::summarizeProfiles(runs, steps, kPeak));
  INFO(table);
  std::vector<std::string> lines;
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == "profile: 2 runs on test device, 3.000 ms per run");
  CHECK(lines[1] == "peak:    10.0 GB/s memory, 100.00 GFLOP/s fp32");
  for (const char *header : {"step", "kernel", "calls", "total ms", "mean us", "run %", "bytes",
                             "FLOPs", "GB/s", "FLOP/s", "bw %", "fp32 %", "bound"})
    CHECK_THAT(lines[2], Catch::Contains(header));
  // gemm: 2 calls, 4 ms, 2000 us each, 66.7% of the run, 1 MB, 200 M FLOPs,
  // 0.50 GB/s, 100 GFLOP/s, 5% and 100% of peak, compute bound.
  for (const char *cell : {"gemm", "4.000", "2000.0", "66.7%", "1.00 MB", "200.00 M", "0.50",
                           "100.00 GFLOP/s", "5.0%", "100.0%", "compute"})
    CHECK_THAT(lines[3], Catch::Contains(cell));
  // copy: 2e3 FLOPs in 1 ms is reported in MFLOP/s rather than as 0.00 GFLOP/s.
  CHECK_THAT(lines[4], Catch::Contains("copy") && Catch::Contains("2.00 MFLOP/s") &&
                           Catch::EndsWith("memory"));
  CHECK_THAT(lines[5], Catch::StartsWith("copy") && Catch::Contains("inputs (to device)") &&
                           Catch::Contains("10.00"));
  CHECK(lines[6] == "total:   6.000 ms in 2 runs: kernels 5.000 ms (83.3%), copies 0.100 ms "
                    "(1.7%), other 0.900 ms (15.0%)");
  // Columns line up: numbers are right-aligned in their column.
  auto cellEnd = [](const std::string &line, const std::string &cell) {
    return line.find(cell) + cell.size();
  };
  CHECK(cellEnd(lines[3], " 2000.0 ") == cellEnd(lines[4], " 500.0 "));
  CHECK(cellEnd(lines[3], " 2000.0 ") == cellEnd(lines[2], " mean us "));
}

TEST_CASE("the Chrome trace is valid JSON with escaped names and the events' work",
          "[profile]") {
  std::string oddName = "k\"0\\weird\nname\t\x01" "end"; // (split: \x01e would be one escape)
  std::vector<runtime::PlanStep> steps = {step(oddName, 2'000'000, 1'000'000)};
  RunProfile first{"dev \"x\"", 2.0, {}};
  first.events.push_back(kernelEvent(oddName, 0, 0.5, 1.0));
  first.events.push_back({"outputs", ProfileCategory::CopyToHost, -1, 1.5, 0.25, 4096});
  RunProfile second{"dev \"x\"", 3.0, {}};
  second.events.push_back(kernelEvent(oddName, 0, 0.25, 0.0)); // no time: no rate
  std::vector<RunProfile> runs = {first, second};

  std::string text = runtime::chromeTraceJson(runs, steps);
  INFO(text);
  CHECK_THAT(text, Catch::Contains(R"("k\"0\\weird\nname\t\u0001end")"));
  std::optional<test::Json> json = test::StrictJsonParser::parse(text);
  REQUIRE(json);
  CHECK((*json)["displayTimeUnit"].string == "ms");
  const std::vector<test::Json> &events = (*json)["traceEvents"].elements;

  std::vector<const test::Json *> kernels, copies, runSpans;
  for (const test::Json &event : events) {
    REQUIRE(event.has("ph"));
    if (event["ph"].string != "X")
      continue;
    for (const char *key : {"name", "cat", "ts", "dur", "pid", "tid", "args"})
      REQUIRE(event.has(key));
    const std::string &category = event["cat"].string;
    (category == "kernel" ? kernels : category == "run" ? runSpans : copies).push_back(&event);
  }
  REQUIRE(kernels.size() == 2);
  REQUIRE(copies.size() == 1);
  REQUIRE(runSpans.size() == 2);
  const test::Json &kernel = *kernels[0];
  CHECK(kernel["name"].string == oddName);
  CHECK(kernel["ts"].number == Approx(500.0));
  CHECK(kernel["dur"].number == Approx(1000.0));
  CHECK(kernel["args"]["flops"].number == 2'000'000);
  CHECK(kernel["args"]["bytes"].number == 1'000'000);
  CHECK(kernel["args"]["GB/s"].number == Approx(1.0));
  CHECK(kernel["args"]["GFLOP/s"].number == Approx(2.0));
  // The second run starts where the first ended (2 ms), and a zero-length
  // event has no rate (JSON has no infinity).
  CHECK(kernels[1]->members.at("ts").number == Approx(2250.0));
  CHECK_FALSE((*kernels[1])["args"].has("GB/s"));
  CHECK((*runSpans[1])["ts"].number == Approx(2000.0));
  CHECK((*runSpans[1])["dur"].number == Approx(3000.0));
  const test::Json &copy = *copies[0];
  CHECK(copy["cat"].string == "copy_to_host");
  CHECK(copy["args"]["bytes"].number == 4096);
  CHECK(copy["tid"].number != kernel["tid"].number);
}

TEST_CASE("writeChromeTrace writes the trace atomically and names the path on failure",
          "[profile]") {
  testing::TempDir dir;
  std::vector<runtime::PlanStep> steps = twoSteps();
  std::vector<RunProfile> runs = twoRuns();

  SECTION("the trace is written and no temporary is left") {
    std::string path = dir.file("trace.json");
    auto written = runtime::writeChromeTrace(path, runs, steps);
    REQUIRE(written);
    CHECK(dir.entries() == std::set<std::string>{"trace.json"});
    std::ifstream in(path);
    std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(contents == runtime::chromeTraceJson(runs, steps));
    CHECK(test::StrictJsonParser::parse(contents));
  }
  SECTION("a missing directory is an error naming the path") {
    std::string path = dir.file("no/such/dir/trace.json");
    auto written = runtime::writeChromeTrace(path, runs, steps);
    REQUIRE_FALSE(written);
    CHECK(written.error().code() == ErrorCode::IOError);
    CHECK_THAT(written.error().message(),
               Catch::StartsWith("cannot write profile trace '" + path + "': "));
    CHECK(dir.entries().empty());
  }
  SECTION("a directory in the way fails after writing, and the temporary is removed") {
    std::filesystem::create_directory(dir.file("taken"));
    std::ofstream(dir.file("taken/inside")) << "keeps the directory non-empty";
    std::string path = dir.file("taken");
    auto written = runtime::writeChromeTrace(path, runs, steps);
    REQUIRE_FALSE(written);
    CHECK_THAT(written.error().message(),
               Catch::StartsWith("cannot write profile trace '" + path + "': cannot rename '"));
    CHECK(dir.entries() == std::set<std::string>{"taken"});
  }
}
