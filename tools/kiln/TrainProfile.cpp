// The training profile's lines: kernel time, then the communication figure
// (runtime/CommunicationOverlap.h) over all runs and for the median run.
#include "tools/kiln/TrainProfile.h"

#include "runtime/ChromeTrace.h"
#include "runtime/CommunicationOverlap.h"
#include "runtime/ProfileReport.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace kiln::tool {

Expected<std::string> trainingProfileReport(std::span<const runtime::RunProfile> runs,
                                            const std::optional<std::string> &tracePath) {
  double totalMs = 0, kernelMs = 0;
  std::vector<double> hiddenPerRun;
  for (const runtime::RunProfile &run : runs) {
    totalMs += run.totalMs;
    for (const runtime::ProfileEvent &event : run.events)
      if (event.category == runtime::ProfileCategory::Kernel ||
          event.category == runtime::ProfileCategory::Graph)
        kernelMs += event.durationMs;
    if (std::optional<double> hidden =
            runtime::measureCommunicationOverlap(std::span(&run, 1)).hiddenFraction())
      hiddenPerRun.push_back(*hidden);
  }
  std::string text = fmt::format("profile:   {} program runs, {:.3f} ms, kernels {:.3f} ms\n",
                                 runs.size(), totalMs, kernelMs);
  runtime::CommunicationOverlap overlap = runtime::measureCommunicationOverlap(runs);
  if (hiddenPerRun.empty()) {
    text += "comm:      no all-reduce on the communication thread (one rank, or a device "
            "program)\n";
  } else {
    std::ranges::sort(hiddenPerRun);
    double median = hiddenPerRun[hiddenPerRun.size() / 2];
    std::string line = runtime::formatCommunicationLine(overlap);
    line.erase(0, line.find_first_not_of(' ', line.find(':') + 1));
    line.pop_back(); // its newline
    text += fmt::format("comm:      {}; median step {:.1f}% hidden\n", line, median * 100);
  }
  if (tracePath) {
    KILN_TRY_VOID(runtime::writeChromeTrace(*tracePath, runs, {}));
    text += fmt::format("trace:     {} (open in https://ui.perfetto.dev or chrome://tracing)\n",
                        *tracePath);
  }
  return text;
}

} // namespace kiln::tool
