// CPU feature detection for CPU bundles: CPUID and XGETBV on x86-64, by the
// bits Intel's and AMD's manuals give, under LLVM's feature names.
#include "runtime/bundle/HostCpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln::runtime::bundle {
namespace {

/// Which register of which CPUID leaf holds a feature's bit.
enum class Reg { Eax, Ebx, Ecx, Edx };
/// Register state the OS must enable (XCR0) for a feature to be usable.
enum class OsState { None, Avx, Avx512, Amx };

struct FeatureBit {
  const char *name; ///< LLVM's name
  uint32_t leaf, subleaf;
  Reg reg;
  int bit;
  OsState os;
};

// The extensions LLVM may emit instructions from for kiln's kernels. System
// features (xsaves, invpcid, ...) are not here: generated code never uses them.
constexpr FeatureBit kFeatures[] = {
    {"cx8", 1, 0, Reg::Edx, 8, OsState::None},
    {"cmov", 1, 0, Reg::Edx, 15, OsState::None},
    {"mmx", 1, 0, Reg::Edx, 23, OsState::None},
    {"fxsr", 1, 0, Reg::Edx, 24, OsState::None},
    {"sse", 1, 0, Reg::Edx, 25, OsState::None},
    {"sse2", 1, 0, Reg::Edx, 26, OsState::None},
    {"sse3", 1, 0, Reg::Ecx, 0, OsState::None},
    {"pclmul", 1, 0, Reg::Ecx, 1, OsState::None},
    {"ssse3", 1, 0, Reg::Ecx, 9, OsState::None},
    {"fma", 1, 0, Reg::Ecx, 12, OsState::Avx},
    {"cx16", 1, 0, Reg::Ecx, 13, OsState::None},
    {"sse4.1", 1, 0, Reg::Ecx, 19, OsState::None},
    {"sse4.2", 1, 0, Reg::Ecx, 20, OsState::None},
    {"crc32", 1, 0, Reg::Ecx, 20, OsState::None},
    {"movbe", 1, 0, Reg::Ecx, 22, OsState::None},
    {"popcnt", 1, 0, Reg::Ecx, 23, OsState::None},
    {"aes", 1, 0, Reg::Ecx, 25, OsState::None},
    {"avx", 1, 0, Reg::Ecx, 28, OsState::Avx},
    {"f16c", 1, 0, Reg::Ecx, 29, OsState::Avx},
    {"rdrnd", 1, 0, Reg::Ecx, 30, OsState::None},
    {"bmi", 7, 0, Reg::Ebx, 3, OsState::None},
    {"avx2", 7, 0, Reg::Ebx, 5, OsState::Avx},
    {"bmi2", 7, 0, Reg::Ebx, 8, OsState::None},
    {"avx512f", 7, 0, Reg::Ebx, 16, OsState::Avx512},
    {"evex512", 7, 0, Reg::Ebx, 16, OsState::Avx512},
    {"avx512dq", 7, 0, Reg::Ebx, 17, OsState::Avx512},
    {"rdseed", 7, 0, Reg::Ebx, 18, OsState::None},
    {"adx", 7, 0, Reg::Ebx, 19, OsState::None},
    {"avx512ifma", 7, 0, Reg::Ebx, 21, OsState::Avx512},
    {"avx512cd", 7, 0, Reg::Ebx, 28, OsState::Avx512},
    {"sha", 7, 0, Reg::Ebx, 29, OsState::None},
    {"avx512bw", 7, 0, Reg::Ebx, 30, OsState::Avx512},
    {"avx512vl", 7, 0, Reg::Ebx, 31, OsState::Avx512},
    {"avx512vbmi", 7, 0, Reg::Ecx, 1, OsState::Avx512},
    {"avx512vbmi2", 7, 0, Reg::Ecx, 6, OsState::Avx512},
    {"gfni", 7, 0, Reg::Ecx, 8, OsState::None},
    {"vaes", 7, 0, Reg::Ecx, 9, OsState::Avx},
    {"vpclmulqdq", 7, 0, Reg::Ecx, 10, OsState::Avx},
    {"avx512vnni", 7, 0, Reg::Ecx, 11, OsState::Avx512},
    {"avx512bitalg", 7, 0, Reg::Ecx, 12, OsState::Avx512},
    {"avx512vpopcntdq", 7, 0, Reg::Ecx, 14, OsState::Avx512},
    {"amx-bf16", 7, 0, Reg::Edx, 22, OsState::Amx},
    {"avx512fp16", 7, 0, Reg::Edx, 23, OsState::Avx512},
    {"amx-tile", 7, 0, Reg::Edx, 24, OsState::Amx},
    {"amx-int8", 7, 0, Reg::Edx, 25, OsState::Amx},
    {"avxvnni", 7, 1, Reg::Eax, 4, OsState::Avx},
    {"avx512bf16", 7, 1, Reg::Eax, 5, OsState::Avx512},
    {"sahf", 0x80000001, 0, Reg::Ecx, 0, OsState::None},
    {"lzcnt", 0x80000001, 0, Reg::Ecx, 5, OsState::None},
    {"sse4a", 0x80000001, 0, Reg::Ecx, 6, OsState::None},
    {"prfchw", 0x80000001, 0, Reg::Ecx, 8, OsState::None},
    {"xop", 0x80000001, 0, Reg::Ecx, 11, OsState::Avx},
    {"fma4", 0x80000001, 0, Reg::Ecx, 16, OsState::Avx},
};

#if defined(__x86_64__)
std::set<std::string> detectFeatures() {
  std::set<std::string> found;
  unsigned maxLeaf = __get_cpuid_max(0, nullptr);
  unsigned maxExtended = __get_cpuid_max(0x80000000, nullptr);
  // Which register states the OS saves on a context switch (XCR0), when it says so (OSXSAVE).
  uint64_t xcr0 = 0;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) {
    uint32_t low = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    xcr0 = (uint64_t{high} << 32) | low;
  }
  bool avxState = (xcr0 & 0x6) == 0x6;
  bool avx512State = avxState && (xcr0 & 0xe0) == 0xe0;
  bool amxState = (xcr0 & 0x60000) == 0x60000;
  // CPUID traps to the hypervisor in a virtual machine: each (leaf, subleaf) is asked once.
  std::map<std::pair<uint32_t, uint32_t>, std::array<unsigned, 4>> leaves;
  for (const FeatureBit &feature : kFeatures) {
    unsigned limit = feature.leaf >= 0x80000000 ? maxExtended : maxLeaf;
    if (feature.leaf > limit)
      continue;
    auto [slot, fresh] = leaves.try_emplace({feature.leaf, feature.subleaf});
    std::array<unsigned, 4> &regs = slot->second;
    if (fresh)
      __cpuid_count(feature.leaf, feature.subleaf, regs[0], regs[1], regs[2], regs[3]);
    if (!(regs[static_cast<int>(feature.reg)] & (1u << feature.bit)))
      continue;
    bool usable = feature.os == OsState::None || (feature.os == OsState::Avx && avxState) ||
                  (feature.os == OsState::Avx512 && avx512State) ||
                  (feature.os == OsState::Amx && amxState);
    if (usable)
      found.insert(feature.name);
  }
  return found;
}
#else
std::set<std::string> detectFeatures() { return {}; }
#endif

/// The "+name" entries of an LLVM feature string.
std::vector<std::string> enabledFeatures(std::string_view features) {
  std::vector<std::string> enabled;
  while (!features.empty()) {
    size_t comma = features.find(',');
    std::string_view item = features.substr(0, comma);
    if (item.size() > 1 && item.front() == '+')
      enabled.emplace_back(item.substr(1));
    features = comma == std::string_view::npos ? std::string_view{} : features.substr(comma + 1);
  }
  return enabled;
}

} // namespace

const std::set<std::string> &hostCpuFeatures() {
  static const std::set<std::string> features = detectFeatures();
  return features;
}

bool isDetectableCpuFeature(std::string_view feature) {
#if defined(__x86_64__)
  return std::any_of(std::begin(kFeatures), std::end(kFeatures),
                     [&](const FeatureBit &bit) { return feature == bit.name; });
#else
  (void)feature;
  return false;
#endif
}

std::vector<std::string> missingCpuFeatures(std::string_view requiredFeatures,
                                            const std::set<std::string> &host) {
  std::vector<std::string> missing;
  for (std::string &feature : enabledFeatures(requiredFeatures))
    if (isDetectableCpuFeature(feature) && !host.contains(feature))
      missing.push_back(std::move(feature));
  return missing;
}

std::string_view hostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

Expected<void> checkHostCpu(std::string_view triple, std::string_view cpuName,
                            std::string_view features, const std::set<std::string> &host) {
  std::string_view architecture = triple.substr(0, triple.find('-'));
  if (architecture != hostArchitecture() || triple.find("linux") == std::string_view::npos)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("the bundle's code is for {} ({}); this machine runs {} Linux "
                                 "code",
                                 triple, cpuName, hostArchitecture()));
  std::vector<std::string> missing = missingCpuFeatures(features, host);
  if (!missing.empty())
    return makeError(ErrorCode::Unsupported,
                     fmt::format("the bundle's code was compiled for {} ({}) and needs CPU "
                                 "features this machine lacks: {}; build the bundle on (or for) "
                                 "a CPU like this one",
                                 cpuName, triple, fmt::join(missing, ", ")));
  return {};
}

} // namespace kiln::runtime::bundle
