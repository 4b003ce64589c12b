// Choosing the tuned device whose records an offline GPU build uses.
#include "compiler/tuning/OfflineGpuTarget.h"

#include "compiler/GpuCompile.h"
#include "runtime/tuning/TuningDatabase.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

namespace kiln::compiler {
namespace {

/// The value of `;name=` in a fingerprint ("" when absent).
std::string_view fieldOf(std::string_view fingerprint, std::string_view name) {
  std::string needle = fmt::format(";{}=", name);
  size_t at = fingerprint.find(needle);
  if (at == std::string_view::npos)
    return {};
  std::string_view rest = fingerprint.substr(at + needle.size());
  return rest.substr(0, rest.find(';'));
}

/// The GpuTarget::cacheKey() part of a GPU fingerprint (before ";driver=").
std::string_view targetPartOf(std::string_view fingerprint) {
  return fingerprint.substr(0, fingerprint.find(";driver="));
}

std::string devicesList(const std::vector<std::string> &devices) {
  std::vector<std::string> lines;
  for (const std::string &device : devices)
    lines.push_back(fmt::format("  {}\n    {}", describeTunedDevice(device), device));
  return fmt::format("{}", fmt::join(lines, "\n"));
}

} // namespace

std::vector<std::string> tunedDevicesOf(const std::vector<std::string> &fingerprints,
                                        std::string_view arch) {
  std::string prefix = fmt::format("gpu;{};", arch);
  std::vector<std::string> devices;
  for (const std::string &fingerprint : fingerprints) {
    std::string_view driver = fieldOf(fingerprint, "driver");
    bool realDevice = !driver.empty() && driver != "sim" && driver != "unavailable";
    if (fingerprint.starts_with(prefix) && realDevice &&
        std::find(devices.begin(), devices.end(), fingerprint) == devices.end())
      devices.push_back(fingerprint);
  }
  return devices;
}

std::string describeTunedDevice(std::string_view fingerprint) {
  std::string_view arch = fingerprint.substr(0, fingerprint.find(";", 4)).substr(4);
  return fmt::format("{} device ({} SMs, driver {}, toolkit {}, cuDNN {})", arch,
                     fieldOf(fingerprint, "sms"), fieldOf(fingerprint, "driver"),
                     fieldOf(fingerprint, "toolkit"), fieldOf(fingerprint, "cudnn"));
}

Expected<OfflineGpuTarget> offlineGpuTarget(const codegen::GpuTarget &named,
                                            const CompileOptions &options) {
  OfflineGpuTarget offline{
      named, LazyFingerprint::deferred([named] { return offlineGpuFingerprint(named); }), ""};
  if (options.tuning == TuningMode::Off)
    return offline;
  std::string path =
      options.tuningDbPath.empty() ? tuning::TuningDatabase::defaultPath() : options.tuningDbPath;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    if (!options.gpuTuningDevice.empty())
      return makeError(ErrorCode::NotFound,
                       fmt::format("a tuned device '{}' was asked for, but there is no tuning "
                                   "database{}",
                                   options.gpuTuningDevice,
                                   path.empty() ? "" : fmt::format(" at {}", path)));
    return offline; // the compile reports the missing database (or fails, for replay)
  }
  KILN_TRY(tuning::TuningDatabase database, tuning::TuningDatabase::open(path, false));
  KILN_TRY(std::vector<tuning::TuningRecord> records, database.list());
  std::vector<std::string> fingerprints;
  for (const tuning::TuningRecord &record : records)
    if (record.key.kilnVersion == kilnVersion())
      fingerprints.push_back(record.key.target);
  std::vector<std::string> devices = tunedDevicesOf(fingerprints, named.archName());

  std::vector<std::string> chosen;
  for (const std::string &device : devices)
    if (options.gpuTuningDevice.empty() ||
        device.find(options.gpuTuningDevice) != std::string::npos)
      chosen.push_back(device);
  // No device of this architecture: the stock target. (--tuned-on names a
  // device of the architectures that have some; a multi-arch bundle may
  // have records for one of them only.)
  if (devices.empty())
    return offline;
  if (chosen.size() != 1) {
    std::string what =
        chosen.empty()
            ? fmt::format("no {} device with records in {} matches '{}'", named.archName(), path,
                          options.gpuTuningDevice)
            : fmt::format("{} holds records of {} {} devices{}: choose one with a piece of its "
                          "fingerprint (--tuned-on TEXT)",
                          path, chosen.size(), named.archName(),
                          options.gpuTuningDevice.empty()
                              ? ""
                              : fmt::format(" matching '{}'", options.gpuTuningDevice));
    Error error(ErrorCode::InvalidArgument, what);
    error.withNote(fmt::format("devices of {} with records:\n{}", named.archName(),
                               devicesList(chosen.empty() ? devices : chosen)));
    return std::unexpected(std::move(error));
  }
  KILN_TRY(codegen::GpuTarget device, codegen::gpuTargetFromCacheKey(targetPartOf(chosen[0])));
  return OfflineGpuTarget{device, chosen[0], describeTunedDevice(chosen[0])};
}

} // namespace kiln::compiler
