// openBenchDevice for builds with kiln's CUDA device layer (runtime/cuda).
#include "bench/gpu/BenchDevice.h"
#include "runtime/cuda/CudaDevice.h"

#include <fmt/format.h>

namespace kiln::bench {

Expected<BenchDevice> openBenchDevice(int ordinal) {
  KILN_TRY(auto cudaDevice, runtime::cuda::openCudaDevice(ordinal));
  const auto &properties = cudaDevice->properties();
  BenchDevice bench;
  bench.name = properties.name;
  bench.ccMajor = properties.ccMajor;
  bench.ccMinor = properties.ccMinor;
  bench.numSms = properties.numSms;
  bench.description = cudaDevice->describe();
  bench.driverVersion = cudaDriverVersion();
  bench.device = std::move(cudaDevice);
  return bench;
}

} // namespace kiln::bench
