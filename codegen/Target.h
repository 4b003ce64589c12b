// The machine a kernel is compiled for. Lowering reads it to pick schedules;
// codegen reads it to configure LLVM; its cache string keys compiled kernels.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::codegen {

/// A host CPU: what the host JIT targets and what CPU schedules are sized for.
struct CpuTarget {
  std::string triple;   ///< e.g. "x86_64-pc-linux-gnu"
  std::string cpuName;  ///< LLVM's name for the host CPU, e.g. "znver4", "skylake-avx512"
  std::string features; ///< LLVM feature string, e.g. "+avx2,+fma,..."
  int vectorBits = 128; ///< widest SIMD register the schedules use (128, 256, 512)
  bool hasFma = false;
  int cores = 1;             ///< hardware threads the thread pool may use
  int64_t l1dBytes = 32768;  ///< per core
  int64_t l2Bytes = 1 << 20; ///< per core
  int64_t l3Bytes = 8 << 20; ///< shared

  /// f32 lanes in one vector register.
  int f32Lanes() const { return vectorBits / 32; }
  /// Everything that changes generated code, as one canonical string.
  std::string cacheKey() const;
};

/// An NVIDIA GPU architecture: what GPU schedules are sized for and what the
/// GPU backends (NVPTX, NVRTC) and ptxas compile for.
struct GpuTarget {
  int sm = 80;               ///< compute capability as major * 10 + minor: 80, 86, 89, 90
  bool archSpecific = false; ///< the "a" variant (sm_90a: wgmma, setmaxnreg)
  int ptxVersion = 78;       ///< PTX ISA version as major * 10 + minor (7.8 reads on every sm here)
  int numSms = 108;          ///< streaming multiprocessors (wave quantization, grid sizing)
  int warpSize = 32;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerSm = 2048;
  int maxBlocksPerSm = 32;
  int registersPerSm = 65536;
  int maxRegistersPerThread = 255;
  int64_t staticSharedBytesPerBlock = 48 * 1024; ///< without the opt-in attribute
  int64_t sharedBytesPerSm = 164 * 1024;
  /// With the opt-in attribute a block may take all of an SM's shared memory but the 1 KiB
  /// the hardware reserves per block (A100 163 KiB, sm_86/89 99 KiB, H100 227 KiB).
  int64_t maxSharedBytesPerBlock() const { return sharedBytesPerSm - 1024; }
  int64_t l2Bytes = 40 << 20;

  /// "sm_80", "sm_90a": the name ptxas, NVRTC and LLVM's NVPTX target use.
  std::string archName() const;
  /// Everything that changes generated code, as one canonical string.
  std::string cacheKey() const;
};

/// A GPU target from its architecture name ("sm_80", "sm_86", "sm_89", "sm_90",
/// "sm_90a"), with the figures of that generation's data-center part (A100,
/// A10/RTX 30, L4/RTX 40, H100 SXM). A real device refines them at run time.
Expected<GpuTarget> gpuTargetNamed(std::string_view arch);

/// The target whose cacheKey() is `key` (its inverse): how a tuning record's
/// fingerprint names the device it was tuned on. An error names the first
/// field that is missing or malformed.
Expected<GpuTarget> gpuTargetFromCacheKey(std::string_view key);

/// The architectures every GPU kernel is checked against (ptxas, both backends).
inline constexpr std::string_view kCheckedGpuArchs[] = {"sm_80", "sm_90a"};

/// The machine this process runs on (LLVM's host detection plus the cache
/// sizes the OS reports). Implemented by the host backend.
CpuTarget hostCpuTarget();

/// A fixed, portable target for golden tests: x86-64 with AVX2 and FMA, 8 cores,
/// so printed kernels do not depend on the machine that runs the tests.
CpuTarget referenceCpuTarget();

} // namespace kiln::codegen
