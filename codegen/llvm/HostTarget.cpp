// The host CpuTarget (LLVM's host detection plus the OS's cache sizes), the
// fixed reference target for golden tests, its cache key, and the LLVM
// TargetMachine built from a CpuTarget.
#include "codegen/llvm/HostTargetMachine.h"

#include "codegen/HostVectorMath.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

namespace kiln::codegen {
namespace {

bool hasFeature(const std::string &features, std::string_view name) {
  std::string needle = fmt::format("+{}", name);
  size_t pos = 0;
  while ((pos = features.find(needle, pos)) != std::string::npos) {
    size_t end = pos + needle.size();
    if ((pos == 0 || features[pos - 1] == ',') && (end == features.size() || features[end] == ','))
      return true;
    pos = end;
  }
  return false;
}

int hostThreadCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

/// "48K" / "1024K" / "32M" as bytes; 0 when unreadable.
int64_t parseCacheSize(const std::string &text) {
  if (text.empty())
    return 0;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (...) {
    return 0;
  }
  char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K')
    return value << 10;
  if (unit == 'M')
    return value << 20;
  return value;
}

std::string readLine(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// A data or unified cache's size at `level` from sysfs (glibc's sysconf
/// reports 0 on some virtual machines), or 0.
int64_t sysfsCacheBytes(int level) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::string levelText = readLine(dir + "level");
    if (levelText.empty())
      break;
    std::string type = readLine(dir + "type");
    if (levelText == std::to_string(level) && (type == "Data" || type == "Unified"))
      return parseCacheSize(readLine(dir + "size"));
  }
  return 0;
}

int64_t cacheBytes(int level, int sysconfName, int64_t fallback) {
  long fromSysconf = sysconf(sysconfName);
  if (fromSysconf > 0)
    return fromSysconf;
  if (int64_t fromSysfs = sysfsCacheBytes(level); fromSysfs > 0)
    return fromSysfs;
  return fallback;
}

void deriveVectorFeatures(CpuTarget &target) {
  llvm::Triple triple(target.triple);
  if (triple.isX86()) {
    target.vectorBits = hasFeature(target.features, "avx512f") ? 512
                        : hasFeature(target.features, "avx")   ? 256
                                                               : 128;
    target.hasFma = hasFeature(target.features, "fma");
  } else if (triple.isAArch64()) {
    target.vectorBits = 128;
    target.hasFma = true;
  } else {
    target.vectorBits = 128;
    target.hasFma = false;
  }
}

} // namespace

std::string CpuTarget::cacheKey() const {
  return fmt::format(
      "cpu;triple={};cpu={};features={};vector={};fma={};cores={};l1d={};l2={};l3={}", triple,
      cpuName, features, vectorBits, hasFma ? 1 : 0, cores, l1dBytes, l2Bytes, l3Bytes);
}

CpuTarget hostCpuTarget() {
  CpuTarget target;
  target.triple = llvm::sys::getProcessTriple();
  target.cpuName = llvm::sys::getHostCPUName().str();
  // Sorted, enabled and disabled alike, so the string (and the cache key) is
  // canonical and tells LLVM exactly what this CPU lacks.
  std::vector<std::string> features;
  for (const auto &entry : llvm::sys::getHostCPUFeatures())
    features.push_back(fmt::format("{}{}", entry.second ? '+' : '-', entry.first().str()));
  std::sort(features.begin(), features.end(),
            [](const std::string &a, const std::string &b) { return a.substr(1) < b.substr(1); });
  target.features = fmt::format("{}", fmt::join(features, ","));
  deriveVectorFeatures(target);
  target.cores = hostThreadCount();
  target.l1dBytes = cacheBytes(1, _SC_LEVEL1_DCACHE_SIZE, target.l1dBytes);
  target.l2Bytes = cacheBytes(2, _SC_LEVEL2_CACHE_SIZE, target.l2Bytes);
  target.l3Bytes = cacheBytes(3, _SC_LEVEL3_CACHE_SIZE, target.l3Bytes);
  return target;
}

CpuTarget referenceCpuTarget() {
  CpuTarget target;
  target.triple = "x86_64-pc-linux-gnu";
  target.cpuName = "x86-64-v3";
  target.features = "+avx,+avx2,+bmi,+bmi2,+cx16,+f16c,+fma,+lzcnt,+movbe,+popcnt,+sse,+sse2,"
                    "+sse3,+sse4.1,+sse4.2,+ssse3,+xsave";
  target.vectorBits = 256;
  target.hasFma = true;
  target.cores = 8;
  target.l1dBytes = 32 << 10;
  target.l2Bytes = 1 << 20;
  target.l3Bytes = 32 << 20;
  return target;
}

namespace host {

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target) {
  initializeNativeTarget();
  std::string message;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, message);
  if (!llvmTarget)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("host backend: no LLVM target for triple '{}' ({}); this build "
                                 "compiles only for its own CPU",
                                 target.triple, message));
  llvm::TargetOptions options; // strict IEEE: no fast-math, contraction only through Fma
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpuName, target.features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive, /*JIT=*/false));
  if (!machine)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("host backend: LLVM cannot make a target machine for {} / {}",
                                 target.triple, target.cpuName));
  return machine;
}

bool hasNativeHalfConversions(const CpuTarget &target) {
  llvm::Triple triple(target.triple);
  if (triple.isX86())
    return hasFeature(target.features, "f16c");
  return triple.isAArch64();
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, bool slpVectorize) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  // On x86-64 the vectorizer may call libmvec's variants of the math functions the CPU's
  // features allow (registered before the default analyses, so this library info is the one
  // every pass sees). The descriptions point into `abiNames`, which outlives the pipeline.
  llvm::TargetLibraryInfoImpl libraryInfo{machine.getTargetTriple()};
  std::vector<std::string> abiNames;
  abiNames.reserve(vectorMathFunctions().size()); // never reallocated: the descriptions keep views
  if (machine.getTargetTriple().isX86()) {
    std::string features = machine.getTargetFeatureString().str();
    std::vector<llvm::VecDesc> variants;
    for (const VectorMathFunction &function : vectorMathFunctions()) {
      if (!hasFeature(features, function.feature))
        continue;
      const std::string &abi = abiNames.emplace_back(fmt::format(
          "_ZGV_LLVM_N{}{}", function.lanes, std::string(size_t(function.arguments), 'v')));
      variants.emplace_back(function.scalar, function.vector,
                            llvm::ElementCount::getFixed(function.lanes), /*Masked=*/false, abi);
    }
    libraryInfo.addVectorizableFunctions(variants);
  }
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  llvm::PipelineTuningOptions tuning; // loop vectorization, interleaving, unrolling: on
  tuning.SLPVectorization = slpVectorize;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

} // namespace host
} // namespace kiln::codegen
