// The CUDA driver's version and the architecture string, for the report.
#include "bench/gpu/BenchDevice.h"

#include <fmt/format.h>

#include <dlfcn.h>

namespace kiln::bench {

std::string BenchDevice::gpuArch() const {
  if (ccMajor == 9 && ccMinor == 0)
    return "sm_90a";
  return fmt::format("sm_{}{}", ccMajor, ccMinor);
}

std::string cudaDriverVersion() {
  // Its own handle, so the answer does not depend on how the device layer
  // loaded libcuda; the library stays loaded (the device layer holds it too).
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return "unknown";
  using DriverGetVersion = int (*)(int *);
  auto getVersion = reinterpret_cast<DriverGetVersion>(dlsym(library, "cuDriverGetVersion"));
  int version = 0;
  if (!getVersion || getVersion(&version) != 0)
    return "unknown";
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

} // namespace kiln::bench
