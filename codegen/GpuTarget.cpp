// GPU targets by architecture name, with the figures of each generation's
// data-center part, and their canonical cache strings.
#include "codegen/Target.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

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

Expected<GpuTarget> gpuTargetFromCacheKey(std::string_view key) {
  std::vector<std::string_view> fields;
  for (size_t start = 0; start <= key.size();) {
    size_t end = key.find(';', start);
    if (end == std::string_view::npos)
      end = key.size();
    fields.push_back(key.substr(start, end - start));
    start = end + 1;
  }
  auto fail = [&](std::string_view what) -> Expected<GpuTarget> {
    return makeError(ErrorCode::FormatError,
                     fmt::format("not a GPU target key ({}): '{}'", what, key));
  };
  if (fields.size() != 13 || fields[0] != "gpu")
    return fail("expected 'gpu;sm_XX;ptxNN;sms=...;...;l2=...', 13 fields");
  KILN_TRY(GpuTarget target, gpuTargetNamed(fields[1]));
  auto number = [&](std::string_view field, std::string_view prefix, auto &out) -> bool {
    if (!field.starts_with(prefix))
      return false;
    std::string_view digits = field.substr(prefix.size());
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return error == std::errc() && end == digits.data() + digits.size();
  };
  struct Field {
    std::string_view prefix;
    bool parsed;
  };
  const Field parsed[] = {
      {"ptx", number(fields[2], "ptx", target.ptxVersion)},
      {"sms=", number(fields[3], "sms=", target.numSms)},
      {"warp=", number(fields[4], "warp=", target.warpSize)},
      {"tpb=", number(fields[5], "tpb=", target.maxThreadsPerBlock)},
      {"tpsm=", number(fields[6], "tpsm=", target.maxThreadsPerSm)},
      {"bpsm=", number(fields[7], "bpsm=", target.maxBlocksPerSm)},
      {"regs=", number(fields[8], "regs=", target.registersPerSm)},
      {"maxreg=", number(fields[9], "maxreg=", target.maxRegistersPerThread)},
      {"smem=", number(fields[10], "smem=", target.staticSharedBytesPerBlock)},
      {"smemsm=", number(fields[11], "smemsm=", target.sharedBytesPerSm)},
      {"l2=", number(fields[12], "l2=", target.l2Bytes)},
  };
  for (const Field &field : parsed)
    if (!field.parsed)
      return fail(fmt::format("field {} is missing or not a number", field.prefix));
  return target;
}

} // namespace kiln::codegen
