// `kiln run --profile`: the peak (the model's device's, else the host's with
// its bandwidth measured once), the table, the trace. No device-specific code:
// everything comes through CompiledModel and RunProfile.
#include "tools/kiln/ProfileOutput.h"

#include "codegen/Target.h"
#include "runtime/ChromeTrace.h"
#include "runtime/ProfileReport.h"
#include "runtime/cpu/HostPeak.h"
#include "tools/kiln/Commands.h"

#include <fmt/format.h>

namespace kiln::tool {

namespace {

/// The host's peak: fp32 from the CPU target's figures and the clock, memory
/// bandwidth from a ~0.1 s copy stream (run after the timed runs, so it does
/// not disturb them). Prints how each figure was found.
runtime::DevicePeak measureHostPeak() {
  codegen::CpuTarget target = codegen::hostCpuTarget();
  cpu::HostComputeFigures figures{target.cores, target.f32Lanes(), target.hasFma,
                                  cpu::hostMaxClockHz()};
  double bandwidth = cpu::measureHostMemoryBandwidth();
  if (figures.clockHz > 0)
    fmt::print("host peak: fp32 = {} threads x {} f32 lanes x {} x 2 x {:.2f} GHz; memory "
               "bandwidth measured by a 64 MiB copy on {} threads\n",
               figures.cores, figures.f32Lanes,
               figures.hasFma ? fmt::format("{} FMA pipes", cpu::kFmaUnitsPerCore)
                              : std::string("1 add+mul pipe pair"),
               figures.clockHz / 1e9, figures.cores);
  else
    fmt::print("host peak: fp32 unknown (no clock in sysfs or /proc/cpuinfo); memory bandwidth "
               "measured by a 64 MiB copy\n");
  return cpu::hostDevicePeak(figures, bandwidth);
}

} // namespace

int reportProfile(const CompiledModel &model, std::vector<runtime::RunProfile> profiles,
                  const std::string &target, const std::optional<std::string> &tracePath) {
  for (runtime::RunProfile &profile : profiles)
    if (profile.device.empty())
      profile.device = target;
  // A device model reports its device's peak (the simulator's is unknown);
  // a host model's is the CPU's, measured now.
  const runtime::DevicePeak *devicePeak = model.devicePeak();
  runtime::DevicePeak peak = devicePeak ? *devicePeak : measureHostPeak();

  runtime::ProfileSummary summary =
      runtime::summarizeProfiles(profiles, model.plan().steps, peak);
  fmt::print("{}", runtime::formatProfileTable(summary));
  if (tracePath) {
    if (auto written = runtime::writeChromeTrace(*tracePath, profiles, model.plan().steps);
        !written)
      return reportError("run", written.error());
    fmt::print("trace:   {} (open in https://ui.perfetto.dev or chrome://tracing)\n", *tracePath);
  }
  return kExitOk;
}

} // namespace kiln::tool
