// The architecture a GPU bundle loads on a device.
#include "runtime/bundle/GpuArchChoice.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace kiln::runtime::bundle {

Expected<ArchNumber> parseArchName(std::string_view name) {
  ArchNumber number;
  std::string_view digits = name;
  if (digits.starts_with("sm_"))
    digits.remove_prefix(3);
  else
    digits = {};
  if (digits.ends_with('a')) {
    number.archSpecific = true;
    digits.remove_suffix(1);
  }
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number.sm);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      number.sm < 10 || number.sm > 999)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("'{}' is not a GPU architecture name (sm_80, sm_90a, ...)", name));
  return number;
}

Expected<ArchChoice> chooseGpuArch(int deviceSm, const std::vector<BundleArch> &archs) {
  std::optional<size_t> best;
  ArchNumber bestNumber;
  std::vector<std::string> names;
  for (size_t i = 0; i < archs.size(); ++i) {
    names.push_back(archs[i].name);
    auto number = parseArchName(archs[i].name);
    if (!number)
      continue;
    bool runs = number->archSpecific ? number->sm == deviceSm : number->sm <= deviceSm;
    if (!runs)
      continue;
    bool newer = !best || number->sm > bestNumber.sm ||
                 (number->sm == bestNumber.sm && number->archSpecific && !bestNumber.archSpecific);
    if (newer) {
      best = i;
      bestNumber = *number;
    }
  }
  if (!best)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("the bundle has kernels for {}, none of which runs on this GPU "
                                 "(sm_{}); rebuild it with --arch sm_{}",
                                 names.empty() ? std::string("no architecture")
                                               : fmt::format("{}", fmt::join(names, ", ")),
                                 deviceSm, deviceSm));
  ArchChoice choice;
  choice.index = *best;
  const BundleArch &arch = archs[*best];
  choice.useCubin = arch.hasCubin && bestNumber.sm / 10 == deviceSm / 10;
  std::string compute = "compute" + arch.name.substr(2);
  choice.reason = choice.useCubin
                      ? fmt::format("cubin for {}", arch.name)
                      : fmt::format("PTX for {} (compiled by the driver for sm_{})", compute,
                                    deviceSm);
  return choice;
}

} // namespace kiln::runtime::bundle
