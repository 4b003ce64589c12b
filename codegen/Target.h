// The machine a kernel is compiled for. Lowering reads it to pick schedules;
// codegen reads it to configure LLVM; its cache string keys compiled kernels.
#pragma once

#include <cstdint>
#include <string>

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

/// The machine this process runs on (LLVM's host detection plus the cache
/// sizes the OS reports). Implemented by the host backend.
CpuTarget hostCpuTarget();

/// A fixed, portable target for golden tests: x86-64 with AVX2 and FMA, 8 cores,
/// so printed kernels do not depend on the machine that runs the tests.
CpuTarget referenceCpuTarget();

} // namespace kiln::codegen
