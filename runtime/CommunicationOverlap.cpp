// Interval overlap of collectives with the union of compute events.
#include "runtime/CommunicationOverlap.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kiln::runtime {

namespace {

using Interval = std::pair<double, double>; // [start, end) in ms

/// The compute events of a run as sorted, disjoint intervals.
std::vector<Interval> computeIntervals(const RunProfile &run) {
  std::vector<Interval> spans;
  for (const ProfileEvent &event : run.events)
    if ((event.category == ProfileCategory::Kernel || event.category == ProfileCategory::Graph) &&
        event.durationMs > 0)
      spans.push_back({event.startMs, event.startMs + event.durationMs});
  std::ranges::sort(spans);
  std::vector<Interval> merged;
  for (const Interval &span : spans) {
    if (!merged.empty() && span.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, span.second);
    else
      merged.push_back(span);
  }
  return merged;
}

} // namespace

std::optional<double> CommunicationOverlap::hiddenFraction() const {
  if (communicationMs <= 0)
    return std::nullopt;
  return hiddenMs / communicationMs;
}

CommunicationOverlap measureCommunicationOverlap(std::span<const RunProfile> runs) {
  CommunicationOverlap overlap;
  for (const RunProfile &run : runs) {
    std::vector<Interval> compute;
    bool computed = false;
    for (const ProfileEvent &event : run.events) {
      if (event.category != ProfileCategory::Communication)
        continue;
      if (!computed) {
        compute = computeIntervals(run);
        computed = true;
      }
      ++overlap.collectives;
      double start = event.startMs, end = event.startMs + std::max(event.durationMs, 0.0);
      overlap.communicationMs += end - start;
      for (const Interval &span : compute)
        overlap.hiddenMs += std::max(0.0, std::min(end, span.second) - std::max(start, span.first));
    }
  }
  return overlap;
}

} // namespace kiln::runtime
