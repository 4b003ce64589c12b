// Profile aggregation (per kernel and per copy, rates against the peak) and
// the fixed-width table `kiln run --profile` prints.
#include "runtime/ProfileReport.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace kiln::runtime {

namespace {

double secondsOf(double ms) { return ms * 1e-3; }

/// Achieved over peak, when both are known.
std::optional<double> fractionOf(double achieved, double peak, double ms) {
  if (peak <= 0 || ms <= 0)
    return std::nullopt;
  return achieved / peak;
}

void finishKernelRow(KernelProfileRow &row, const DevicePeak &peak, double runMs) {
  row.meanMs = row.calls > 0 ? row.totalMs / static_cast<double>(row.calls) : 0;
  row.fractionOfRun = runMs > 0 ? row.totalMs / runMs : 0;
  if (row.totalMs > 0) {
    double calls = static_cast<double>(row.calls);
    row.bytesPerSecond = static_cast<double>(row.bytesPerCall) * calls / secondsOf(row.totalMs);
    row.flopsPerSecond = static_cast<double>(row.flopsPerCall) * calls / secondsOf(row.totalMs);
  }
  row.fractionOfPeakBandwidth =
      fractionOf(row.bytesPerSecond, peak.memoryBytesPerSecond, row.totalMs);
  row.fractionOfPeakFlops = fractionOf(row.flopsPerSecond, peak.f32FlopsPerSecond, row.totalMs);
  if (row.fractionOfPeakBandwidth && row.fractionOfPeakFlops)
    row.bound = *row.fractionOfPeakBandwidth >= *row.fractionOfPeakFlops ? Bound::Memory
                                                                          : Bound::Compute;
}

void finishCopyRow(CopyProfileRow &row, const DevicePeak &peak, double runMs) {
  row.meanMs = row.calls > 0 ? row.totalMs / static_cast<double>(row.calls) : 0;
  row.fractionOfRun = runMs > 0 ? row.totalMs / runMs : 0;
  if (row.totalMs > 0)
    row.bytesPerSecond = static_cast<double>(row.bytes) / secondsOf(row.totalMs);
  row.fractionOfPeakBandwidth =
      fractionOf(row.bytesPerSecond, peak.memoryBytesPerSecond, row.totalMs);
}

/// A launch-graph replay runs every step: its work is the plan's.
KernelProfileRow wholePlanRow(std::span<const PlanStep> steps) {
  KernelProfileRow row;
  for (const PlanStep &step : steps) {
    row.bytesPerCall += step.bytesMoved;
    row.flopsPerCall += step.flops;
  }
  return row;
}

// ---- table formatting ---------------------------------------------------------------------------

/// Decimal units throughout (1 GB = 1e9 bytes), like GB/s.
std::string formatBytes(int64_t bytes) {
  double value = static_cast<double>(bytes);
  if (value >= 1e9)
    return fmt::format("{:.2f} GB", value / 1e9);
  if (value >= 1e6)
    return fmt::format("{:.2f} MB", value / 1e6);
  if (value >= 1e3)
    return fmt::format("{:.2f} kB", value / 1e3);
  return fmt::format("{} B", bytes);
}

std::string formatCount(int64_t count) {
  double value = static_cast<double>(count);
  if (value >= 1e12)
    return fmt::format("{:.2f} T", value / 1e12);
  if (value >= 1e9)
    return fmt::format("{:.2f} G", value / 1e9);
  if (value >= 1e6)
    return fmt::format("{:.2f} M", value / 1e6);
  if (value >= 1e3)
    return fmt::format("{:.2f} k", value / 1e3);
  return fmt::format("{}", count);
}

/// TFLOP/s from one TFLOP/s up, GFLOP/s from one GFLOP/s, MFLOP/s below, so
/// small kernels (and simulated ones) keep their digits.
std::string formatFlopRate(double flopsPerSecond) {
  if (flopsPerSecond >= 1e12)
    return fmt::format("{:.2f} TFLOP/s", flopsPerSecond / 1e12);
  if (flopsPerSecond >= 1e9)
    return fmt::format("{:.2f} GFLOP/s", flopsPerSecond / 1e9);
  return fmt::format("{:.2f} MFLOP/s", flopsPerSecond / 1e6);
}

/// GB/s with two decimals; rates below 0.01 GB/s in scientific notation
/// rather than as a misleading 0.00.
std::string formatBandwidth(double bytesPerSecond) {
  double gigabytes = bytesPerSecond / 1e9;
  if (gigabytes > 0 && gigabytes < 0.01)
    return fmt::format("{:.1e}", gigabytes);
  return fmt::format("{:.2f}", gigabytes);
}

std::string formatPercent(std::optional<double> fraction) {
  return fraction ? fmt::format("{:.1f}%", *fraction * 100) : std::string("-");
}

std::string formatPeak(const DevicePeak &peak) {
  std::string memory = peak.memoryBytesPerSecond > 0
                           ? fmt::format("{:.1f} GB/s memory", peak.memoryBytesPerSecond / 1e9)
                           : std::string("memory bandwidth unknown");
  std::string compute = peak.f32FlopsPerSecond > 0
                            ? fmt::format("{} fp32", formatFlopRate(peak.f32FlopsPerSecond))
                            : std::string("fp32 throughput unknown");
  return memory + ", " + compute;
}

/// Names longer than this are cut (the trace keeps them whole).
constexpr size_t kMaxNameWidth = 48;

std::string fitName(const std::string &name, size_t width) {
  if (name.size() <= width)
    return name;
  return name.substr(0, width - 3) + "...";
}

struct Column {
  const char *header;
  int width;
  bool leftAligned = false;
};

std::string formatLine(const std::vector<Column> &columns, const std::vector<std::string> &cells) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column &column = columns[i];
    if (i > 0)
      line += "  ";
    line += column.leftAligned ? fmt::format("{:<{}}", cells[i], column.width)
                               : fmt::format("{:>{}}", cells[i], column.width);
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return line + "\n";
}

} // namespace

std::string_view boundName(Bound bound) {
  switch (bound) {
  case Bound::Unknown: return "-";
  case Bound::Memory: return "memory";
  case Bound::Compute: return "compute";
  }
  return "-";
}

ProfileSummary summarizeProfiles(std::span<const RunProfile> runs,
                                 std::span<const PlanStep> steps, const DevicePeak &peak) {
  ProfileSummary summary;
  summary.peak = peak;
  summary.runs = static_cast<int>(runs.size());
  // Keyed by (step, name): a kernel event's step finds its counted work; a
  // launch-graph event (step -1) stands for the whole plan.
  std::map<std::pair<int, std::string>, KernelProfileRow> kernels;
  std::map<std::pair<ProfileCategory, std::string>, CopyProfileRow> copies;
  for (const RunProfile &run : runs) {
    if (summary.device.empty())
      summary.device = run.device;
    summary.totalMs += run.totalMs;
    for (const ProfileEvent &event : run.events) {
      switch (event.category) {
      case ProfileCategory::Kernel:
      case ProfileCategory::Graph: {
        bool graph = event.category == ProfileCategory::Graph;
        bool known = !graph && event.step >= 0 && static_cast<size_t>(event.step) < steps.size();
        int step = known ? event.step : -1;
        auto [it, inserted] = kernels.try_emplace({step, event.name});
        KernelProfileRow &row = it->second;
        if (inserted) {
          if (graph)
            row = wholePlanRow(steps);
          row.step = step;
          row.name = event.name;
          if (known) {
            row.bytesPerCall = steps[step].bytesMoved;
            row.flopsPerCall = steps[step].flops;
          }
        }
        row.calls += 1;
        row.totalMs += event.durationMs;
        summary.kernelMs += event.durationMs;
        break;
      }
      case ProfileCategory::CopyToDevice:
      case ProfileCategory::CopyToHost: {
        CopyProfileRow &row = copies[{event.category, event.name}];
        row.category = event.category;
        row.name = event.name;
        row.calls += 1;
        row.totalMs += event.durationMs;
        row.bytes += event.bytes;
        summary.copyMs += event.durationMs;
        break;
      }
      case ProfileCategory::Communication: break; // beside the kernels: measured below
      }
    }
  }
  for (auto &[key, row] : kernels) {
    finishKernelRow(row, peak, summary.totalMs);
    summary.kernels.push_back(std::move(row));
  }
  std::stable_sort(summary.kernels.begin(), summary.kernels.end(),
                   [](const KernelProfileRow &a, const KernelProfileRow &b) {
                     if (a.totalMs != b.totalMs)
                       return a.totalMs > b.totalMs;
                     return std::tie(a.step, a.name) < std::tie(b.step, b.name);
                   });
  // The map's order already is the copies' order: to the device first, then by name.
  for (auto &[key, row] : copies) {
    finishCopyRow(row, peak, summary.totalMs);
    summary.copies.push_back(std::move(row));
  }
  summary.communication = measureCommunicationOverlap(runs);
  return summary;
}

std::string formatCommunicationLine(const CommunicationOverlap &overlap) {
  double fraction = overlap.hiddenFraction().value_or(0);
  return fmt::format("comm:    {:.3f} ms in {} all-reduce{}, {:.1f}% hidden behind kernels "
                     "({:.3f} ms exposed)\n",
                     overlap.communicationMs, overlap.collectives,
                     overlap.collectives == 1 ? "" : "s", fraction * 100,
                     overlap.communicationMs - overlap.hiddenMs);
}

std::string formatProfileTable(const ProfileSummary &summary) {
  size_t nameWidth = std::string_view("kernel").size();
  for (const KernelProfileRow &row : summary.kernels)
    nameWidth = std::max(nameWidth, std::min(row.name.size(), kMaxNameWidth));
  for (const CopyProfileRow &row : summary.copies)
    nameWidth = std::max(nameWidth, std::min(row.name.size() + 12, kMaxNameWidth));

  const std::vector<Column> columns = {
      {"step", 4},     {"kernel", static_cast<int>(nameWidth), true},
      {"calls", 6},    {"total ms", 10},
      {"mean us", 10}, {"run %", 6},
      {"bytes", 9},    {"FLOPs", 9},
      {"GB/s", 9},     {"FLOP/s", 15},
      {"bw %", 6},     {"fp32 %", 6},
      {"bound", 7, true}};
  std::vector<std::string> headers;
  for (const Column &column : columns)
    headers.push_back(column.header);

  double perRunMs = summary.runs > 0 ? summary.totalMs / summary.runs : 0;
  std::string text =
      fmt::format("profile: {} run{} on {}, {:.3f} ms per run\n", summary.runs,
                  summary.runs == 1 ? "" : "s",
                  summary.device.empty() ? std::string("an unnamed device") : summary.device,
                  perRunMs);
  text += fmt::format("peak:    {}\n", formatPeak(summary.peak));
  text += formatLine(columns, headers);
  for (const KernelProfileRow &row : summary.kernels) {
    text += formatLine(
        columns,
        {row.step >= 0 ? fmt::format("{}", row.step) : std::string("-"),
         fitName(row.name, nameWidth), fmt::format("{}", row.calls),
         fmt::format("{:.3f}", row.totalMs), fmt::format("{:.1f}", row.meanMs * 1e3),
         fmt::format("{:.1f}%", row.fractionOfRun * 100), formatBytes(row.bytesPerCall),
         formatCount(row.flopsPerCall), formatBandwidth(row.bytesPerSecond),
         formatFlopRate(row.flopsPerSecond), formatPercent(row.fractionOfPeakBandwidth),
         formatPercent(row.fractionOfPeakFlops), std::string(boundName(row.bound))});
  }
  for (const CopyProfileRow &row : summary.copies) {
    std::string name = fmt::format(
        "{} ({})", row.name,
        row.category == ProfileCategory::CopyToDevice ? "to device" : "to host");
    // A copy's bytes are per call on average, like a kernel's.
    int64_t bytesPerCall = row.calls > 0 ? row.bytes / row.calls : 0;
    text += formatLine(columns, {"copy", fitName(name, nameWidth), fmt::format("{}", row.calls),
                                 fmt::format("{:.3f}", row.totalMs),
                                 fmt::format("{:.1f}", row.meanMs * 1e3),
                                 fmt::format("{:.1f}%", row.fractionOfRun * 100),
                                 formatBytes(bytesPerCall), "-",
                                 formatBandwidth(row.bytesPerSecond), "-",
                                 formatPercent(row.fractionOfPeakBandwidth), "-", "-"});
  }
  auto share = [&](double ms) { return summary.totalMs > 0 ? ms / summary.totalMs * 100 : 0.0; };
  double otherMs = std::max(0.0, summary.totalMs - summary.kernelMs - summary.copyMs);
  // Host runs copy nothing: their total leaves the copies out.
  std::string copies = summary.copies.empty()
                           ? std::string()
                           : fmt::format(", copies {:.3f} ms ({:.1f}%)", summary.copyMs,
                                         share(summary.copyMs));
  text += fmt::format("total:   {:.3f} ms in {} run{}: kernels {:.3f} ms ({:.1f}%){}, other "
                      "{:.3f} ms ({:.1f}%)\n",
                      summary.totalMs, summary.runs, summary.runs == 1 ? "" : "s",
                      summary.kernelMs, share(summary.kernelMs), copies, otherMs, share(otherMs));
  if (summary.communication.hiddenFraction())
    text += formatCommunicationLine(summary.communication);
  return text;
}

} // namespace kiln::runtime
