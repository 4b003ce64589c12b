// Which GPU a compile without a GPU (AOT bundles, `kiln compile --target cuda`
// on a build machine) lowers for, so that tuning records measured on a real
// device choose its schedules (docs/tuning.md, "Records in offline builds").
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "compiler/tuning/LazyFingerprint.h"

#include <string>
#include <vector>

namespace kiln::compiler {

struct OfflineGpuTarget {
  /// What the lowering sizes schedules for: the tuned device's figures, or
  /// the architecture's data-center part (gpuTargetNamed).
  codegen::GpuTarget target;
  /// What tuning records are looked up with: the tuned device's fingerprint,
  /// or offlineGpuFingerprint(target) (made on first use: it loads NVRTC).
  LazyFingerprint fingerprint;
  /// One line for reports: "sm_90a device (132 SMs, driver 13000, toolkit ...,
  /// cuDNN ...)"; empty when no device's records are used.
  std::string tunedDevice;
};

/// For `named` (an architecture, no GPU present): when options.tuning is not
/// Off and the tuning database holds records of this kiln tuned on a real
/// device of exactly that architecture (not the simulator, not another
/// offline build), that device's target and fingerprint, so its records
/// apply; options.gpuTuningDevice picks among several such devices (a piece
/// of the fingerprint), and several without a choice, or a choice that
/// matches none of them, is an error listing the devices. Otherwise (no
/// device of that architecture) `named` with the offline fingerprint; a
/// choice without any database is an error. A database that cannot be read
/// is an error naming it.
Expected<OfflineGpuTarget> offlineGpuTarget(const codegen::GpuTarget &named,
                                            const CompileOptions &options);

/// The fingerprints of the devices of `arch` ("sm_90a") that `fingerprints`
/// (record targets) name, each once, in order: real devices only.
std::vector<std::string> tunedDevicesOf(const std::vector<std::string> &fingerprints,
                                        std::string_view arch);

/// "sm_90a device (132 SMs, driver 13000, toolkit ..., cuDNN 9.10.2)".
std::string describeTunedDevice(std::string_view fingerprint);

} // namespace kiln::compiler
