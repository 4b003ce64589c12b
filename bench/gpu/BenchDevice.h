// The GPU the benchmarks run on, opened through kiln's CUDA device layer, and
// what the report says about it.
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"

#include <memory>
#include <string>

namespace kiln::bench {

struct BenchDevice {
  std::shared_ptr<runtime::Device> device;
  std::string name;         ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string description;  ///< Device::describe()
  int ccMajor = 0, ccMinor = 0;
  int numSms = 0;
  std::string driverVersion; ///< e.g. "13.0", from the driver itself
  /// The architecture kiln compiles for: sm_90a on sm_90 (its arch-specific
  /// features are what kiln's H100 schedules use), sm_XY elsewhere.
  std::string gpuArch() const;
};

/// Opens GPU `ordinal`. The error says why there is none (no driver, no
/// device, or a build of kiln without the CUDA device layer).
Expected<BenchDevice> openBenchDevice(int ordinal);

/// A stand-in in host memory, for `kiln_gpu_bench --host-device`: it runs the
/// sections' logic on a CPU (kiln compiles for the CPU then); no GPU figure.
BenchDevice openHostBenchDevice();

/// The CUDA driver's version ("13.0"), read from libcuda itself; "unknown" when
/// it cannot be loaded.
std::string cudaDriverVersion();

} // namespace kiln::bench
