// The process's devices: created on first use, kept for the process's life.
#include "compiler/Devices.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/sim/SimDevice.h"


namespace kiln::compiler {

DeviceHandle<sim::SimDevice> simDevice() {
  static DeviceHandle<sim::SimDevice> handle = [] {
    std::shared_ptr<sim::SimDevice> device = sim::sharedSimDevice();
    return DeviceHandle<sim::SimDevice>{device,
                                        std::make_shared<runtime::DeviceMemoryPool>(*device)};
  }();
  return handle;
}

Expected<DeviceHandle<runtime::cuda::CudaDevice>> cudaDevice() {
  // Opening the driver is slow and its answer does not change within a process.
  static Expected<DeviceHandle<runtime::cuda::CudaDevice>> handle =
      []() -> Expected<DeviceHandle<runtime::cuda::CudaDevice>> {
    KILN_TRY(std::shared_ptr<runtime::cuda::CudaDevice> device,
             runtime::cuda::openCudaDevice(0));
    auto pool = std::make_shared<runtime::DeviceMemoryPool>(*device);
    return DeviceHandle<runtime::cuda::CudaDevice>{std::move(device), std::move(pool)};
  }();
  return handle;
}

} // namespace kiln::compiler
