// The GPU module cache key: kernel IR, target, backend, toolchain versions and
// environment, and the identity of this build of kiln.
#include "compiler/GpuModuleCache.h"

#include "codegen/Ptxas.h"
#include "codegen/cuda/Nvrtc.h"
#include "ir/kernel/Printer.h"
#include "runtime/cache/CacheDirectory.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KILN_LLVM_VERSION
#error "KILN_LLVM_VERSION is set by CMakeLists.txt from the LLVM kiln links"
#endif

namespace kiln::compiler {
namespace {

/// Finds the GNU build-id note of the loaded object that contains `address`.
struct BuildIdSearch {
  uintptr_t address = 0;
  std::string hex;
};

int findBuildId(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD && search->address >= start &&
        search->address < start + segment.p_memsz)
      contains = true;
  }
  if (!contains)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE)
      continue;
    const auto *at = reinterpret_cast<const unsigned char *>(info->dlpi_addr + segment.p_vaddr);
    const unsigned char *end = at + segment.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
      const unsigned char *name = at + sizeof(ElfW(Nhdr));
      const unsigned char *desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        for (unsigned j = 0; j < note->n_descsz; ++j)
          search->hex += fmt::format("{:02x}", desc[j]);
        return 1;
      }
      at = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1; // the right object, without a build id
}

/// Which ptxas assembles the cubin: its path, size and modification time. A
/// stat rather than `ptxas --version`, which would start a process on every
/// warm start (about 50-100 ms, more than the rest of a cache hit); any
/// install or upgrade of ptxas changes the file, and so the key.
std::string ptxasIdentity() {
  std::string tool = codegen::ptxasPath();
  struct stat info {};
  if (access(tool.c_str(), X_OK) != 0 || ::stat(tool.c_str(), &info) != 0)
    return fmt::format("{} unavailable", tool);
  return fmt::format("{} size={} mtime={}.{:09}", tool, static_cast<int64_t>(info.st_size),
                     static_cast<int64_t>(info.st_mtim.tv_sec),
                     static_cast<int64_t>(info.st_mtim.tv_nsec));
}

std::string nvrtcVersionForKey() {
  auto version = codegen::cuda::nvrtcVersion();
  return version ? *version : std::string("unavailable");
}

} // namespace

std::string gpuToolkitVersion() { return nvrtcVersionForKey(); }

std::string compilerBuildId() {
  static const std::string id = [] {
    BuildIdSearch search;
    search.address = reinterpret_cast<uintptr_t>(&compilerBuildId);
    dl_iterate_phdr(findBuildId, &search);
    return search.hex.empty() ? std::string("none") : search.hex;
  }();
  return id;
}

std::string compilerLlvmVersion() { return KILN_LLVM_VERSION; }

std::string gpuModuleCacheKey(const std::vector<kir::Kernel> &kernels,
                              const codegen::GpuTarget &target, GpuBackend backend) {
  std::vector<std::string> names;
  for (const kir::Kernel &kernel : kernels)
    names.push_back(kernel.name);
  bool nvrtc = backend == GpuBackend::Nvrtc;
  std::string key = fmt::format("{} {} {} kernel{}: {}\n", target.archName(),
                                nvrtc ? "nvrtc" : "llvm", kernels.size(),
                                kernels.size() == 1 ? "" : "s", fmt::join(names, " "));
  key += fmt::format("kiln {} build {}\n", kilnVersion(), compilerBuildId());
  key += fmt::format("target {}\n", target.cacheKey());
  if (nvrtc) {
    key += fmt::format("backend nvrtc {} options {}\n", nvrtcVersionForKey(),
                       fmt::join(codegen::cuda::nvrtcBaseOptions(), " "));
  } else {
    // The cubin of the LLVM backend comes from ptxas, so which ptxas is part of the output.
    key += fmt::format("backend llvm {}\n", KILN_LLVM_VERSION);
    key += fmt::format("ptxas {}\n", ptxasIdentity());
  }
  for (const char *name : kGpuCacheEnvironment) {
    const char *value = std::getenv(name);
    key += fmt::format("env {}={}\n", name, value ? value : "(unset)");
  }
  for (const kir::Kernel &kernel : kernels)
    key += "---- kernel\n" + kir::printKernel(kernel);
  return key;
}

runtime::KernelCache &kernelCacheFor(const CompileOptions &options, std::string *where) {
  runtime::CacheLocation location =
      options.kernelCacheDir.empty()
          ? runtime::cacheLocationFromEnvironment()
          : runtime::CacheLocation{options.kernelCacheDir, "CompileOptions::kernelCacheDir"};
  if (where)
    *where = location.root ? fmt::format("{} ({})", location.root->string(), location.source)
                           : location.source;
  return runtime::sharedKernelCache(location.root);
}

} // namespace kiln::compiler
