// The host object cache: key, lookup, compile on a miss, store.
#include "compiler/HostModuleCache.h"

#include "compiler/GpuModuleCache.h"
#include "ir/kernel/Printer.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>

namespace kiln::compiler {
namespace {

std::vector<std::string> kernelNames(const std::vector<kir::Kernel> &kernels) {
  std::vector<std::string> names;
  for (const kir::Kernel &kernel : kernels)
    names.push_back(kernel.name);
  return names;
}

/// A compile's objects (emitHostObjects) are sections "object", "object.1", "object.2", ...
std::string objectSectionName(size_t index) {
  return index == 0 ? std::string("object") : fmt::format("object.{}", index);
}

std::vector<std::string> objectSections(const runtime::CacheEntry &entry) {
  std::vector<std::string> objects;
  while (const std::string *object = entry.section(objectSectionName(objects.size())))
    objects.push_back(*object);
  return objects;
}

} // namespace

std::string hostModuleCacheKey(const std::vector<kir::Kernel> &kernels,
                               const codegen::CpuTarget &target) {
  std::vector<std::string> names = kernelNames(kernels);
  std::string key = fmt::format("cpu {} {} kernel{}: {}\n", target.cpuName, kernels.size(),
                                kernels.size() == 1 ? "" : "s", fmt::join(names, " "));
  key += fmt::format("kiln {} build {}\n", kilnVersion(), compilerBuildId());
  key += fmt::format("backend llvm-host {}\n", compilerLlvmVersion());
  key += fmt::format("target {}\n", target.cacheKey());
  for (const kir::Kernel &kernel : kernels)
    key += "---- kernel\n" + kir::printKernel(kernel);
  return key;
}

Expected<std::shared_ptr<codegen::HostModule>>
hostModuleFor(const std::vector<kir::Kernel> &kernels, const codegen::CpuTarget &target,
              const CompileOptions &options, CompileReport &report) {
  if (!options.useKernelCache) {
    report.kernelCache = "off";
    return codegen::compileHostModule(kernels, target);
  }
  std::string where;
  runtime::KernelCache &cache = kernelCacheFor(options, &where);
  std::string key = hostModuleCacheKey(kernels, target);
  std::vector<std::string> names = kernelNames(kernels);

  runtime::CacheLookup found = cache.lookup(key);
  report.warnings.insert(report.warnings.end(), found.warnings.begin(), found.warnings.end());
  std::vector<std::string> cached =
      found.entry ? objectSections(*found.entry) : std::vector<std::string>{};
  if (!cached.empty()) {
    Expected<std::shared_ptr<codegen::HostModule>> module =
        codegen::loadHostObjects(cached, names, target);
    if (module) {
      report.kernelCache =
          found.tier == runtime::CacheTier::Memory ? "hit (memory)" : "hit (disk)";
      return module;
    }
    // An intact entry whose code does not link here (a changed runtime, say): rebuild it.
    std::optional<std::filesystem::path> file = cache.entryPath(key);
    report.warnings.push_back(fmt::format(
        "kernel cache: the host code of entry '{}' did not load ({}); compiling it again",
        file ? file->string() : std::string("(memory only)"), module.error().message()));
  }

  KILN_TRY(std::vector<std::string> objects,
           codegen::emitHostObjects(kernels, target, codegen::compileThreads()));
  KILN_TRY(std::shared_ptr<codegen::HostModule> module,
           codegen::loadHostObjects(objects, names, target));
  runtime::CacheEntry entry;
  for (size_t i = 0; i < objects.size(); ++i)
    entry.sections[objectSectionName(i)] = std::move(objects[i]);
  entry.sections["meta"] = fmt::format("cpu={} triple={} kernels={}\n", target.cpuName,
                                       target.triple, kernels.size());
  runtime::CacheStore stored = cache.store(key, entry);
  report.warnings.insert(report.warnings.end(), stored.warnings.begin(), stored.warnings.end());
  report.kernelCache = !cache.root()          ? fmt::format("miss (memory only: {})", where)
                       : stored.writtenToDisk ? fmt::format("miss (written to {})", where)
                                              : std::string("miss (not written)");
  return module;
}

} // namespace kiln::compiler
