// The host CPU's peak, for the profiler's "fraction of peak": fp32 throughput
// from the core count, vector width and clock; memory bandwidth measured.
#pragma once

#include "runtime/Device.h"

#include <cstdint>

namespace kiln::cpu {

/// What the host's fp32 peak is made of (the fields of codegen::CpuTarget, and
/// a clock, so the runtime needs no compiler header).
struct HostComputeFigures {
  int cores = 1;       ///< hardware threads the kernels' thread pool uses
  int f32Lanes = 4;    ///< f32 lanes in the widest vector register the schedules use
  bool hasFma = false; ///< fused multiply-add instructions
  double clockHz = 0;  ///< the highest core clock (0: unknown)
};

/// Vector FMA pipes per core assumed by the peak: two, as on every x86 core
/// since Haswell and Zen 2 and on recent Arm cores. (Some AVX-512 parts have
/// one 512-bit pipe; their peak is overstated twofold.)
inline constexpr int kFmaUnitsPerCore = 2;

/// cores × f32 lanes × kFmaUnitsPerCore × 2 (an FMA is two operations) ×
/// clock. Without FMA, one add and one multiply pipe give the same two
/// operations per lane per cycle, so the formula holds with one "unit".
/// 0 when the clock is unknown. Hyperthreads count as cores: the pool runs
/// one thread on each, so the figure is an upper bound on SMT machines.
double hostPeakF32Flops(const HostComputeFigures &figures);

/// The highest core clock in Hz: sysfs cpufreq's cpuinfo_max_freq, else the
/// largest "cpu MHz" of /proc/cpuinfo (the current clock, which is what a
/// virtual machine without cpufreq offers), else 0.
double hostMaxClockHz();

/// Measures the host's memory bandwidth in bytes per second: copies between
/// two buffers of `bufferBytes` (far beyond the last-level cache) on every
/// thread of the kernels' thread pool, for about `seconds`, and keeps the
/// fastest pass. A pass counts each byte once read and once written, the way
/// kernels' traffic is counted. Returns 0 if the buffers cannot be allocated.
double measureHostMemoryBandwidth(int64_t bufferBytes = int64_t{64} << 20, double seconds = 0.1);

/// The host's peak from its figures and a measured bandwidth.
runtime::DevicePeak hostDevicePeak(const HostComputeFigures &figures,
                                   double memoryBytesPerSecond);

} // namespace kiln::cpu
