// Which of a GPU bundle's architectures a device runs, and as what: the
// cubin assembled for it, or PTX the driver compiles. A pure function, so it
// is tested without a GPU.
#pragma once

#include "support/Error.h"

#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::bundle {

/// One architecture's code in a bundle.
struct BundleArch {
  std::string name;       ///< "sm_80", "sm_90a"
  bool hasCubin = false;  ///< ptxas was available when the bundle was written
};

/// "sm_90a" -> {90, true}; an error for a name that is not sm_<digits>[a].
struct ArchNumber {
  int sm = 0;
  bool archSpecific = false;
};
Expected<ArchNumber> parseArchName(std::string_view name);

struct ArchChoice {
  size_t index = 0;      ///< into the bundle's architectures
  bool useCubin = false; ///< false: the driver JITs the PTX
  std::string reason;    ///< "cubin for sm_90a", "PTX for compute_80 (JIT by the driver for sm_100)"
};

/// The code to load on a device of compute capability `deviceSm` (major * 10
/// + minor). A cubin loads on its own major architecture at the same or a
/// newer minor ("a" cubins only on their exact sm); PTX for compute_XX on any
/// device of sm_XX or newer ("a" PTX only on its exact sm). Of the
/// architectures that run, the newest wins (the "a" variant over the plain
/// one); its cubin when it loads, else its PTX. None running is an
/// Unsupported error listing the bundle's architectures and the device's.
Expected<ArchChoice> chooseGpuArch(int deviceSm, const std::vector<BundleArch> &archs);

} // namespace kiln::runtime::bundle
