// GPU targets by architecture name, with the figures of each generation's
// data-center part, and their canonical cache strings.
#include "codegen/Target.h"

#include <fmt/format.h>

namespace kiln::codegen {

std::string GpuTarget::archName() const {
  return fmt::format("sm_{}{}", sm, archSpecific ? "a" : "");
}

std::string GpuTarget::cacheKey() const {
  // Every field that a schedule or a backend reads, in a fixed order.
  return fmt::format("gpu;{};ptx{};sms={};warp={};tpb={};tpsm={};bpsm={};regs={};maxreg={};"
                     "smem={};smemsm={};l2={}",
                     archName(), ptxVersion, numSms, warpSize, maxThreadsPerBlock,
                     maxThreadsPerSm, maxBlocksPerSm, registersPerSm, maxRegistersPerThread,
                     staticSharedBytesPerBlock, sharedBytesPerSm, l2Bytes);
}

Expected<GpuTarget> gpuTargetNamed(std::string_view arch) {
  GpuTarget target;
  if (arch == "sm_80") {
    target.numSms = 108; // A100
    target.sharedBytesPerSm = 164 * 1024;
    target.l2Bytes = 40 << 20;
  } else if (arch == "sm_86") {
    target.sm = 86; // A10, RTX 30
    target.numSms = 72;
    target.maxThreadsPerSm = 1536;
    target.maxBlocksPerSm = 16;
    target.sharedBytesPerSm = 100 * 1024;
    target.l2Bytes = 6 << 20;
  } else if (arch == "sm_89") {
    target.sm = 89; // L4, RTX 40
    target.numSms = 58;
    target.maxThreadsPerSm = 1536;
    target.maxBlocksPerSm = 24;
    target.sharedBytesPerSm = 100 * 1024;
    target.l2Bytes = 48 << 20;
  } else if (arch == "sm_90" || arch == "sm_90a") {
    target.sm = 90; // H100 SXM
    target.archSpecific = arch == "sm_90a";
    target.ptxVersion = 80;
    target.numSms = 132;
    target.sharedBytesPerSm = 228 * 1024;
    target.l2Bytes = 50 << 20;
  } else {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("unknown GPU architecture '{}': expected sm_80, sm_86, sm_89, "
                                 "sm_90 or sm_90a",
                                 arch));
  }
  return target;
}

} // namespace kiln::codegen
