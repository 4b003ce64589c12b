// The devices compiled models run on, opened once per process and shared by
// every model, each with its memory pool (so models share cached blocks).
#pragma once

#include "runtime/Device.h"
#include "runtime/DeviceMemoryPool.h"
#include "support/Error.h"

#include <memory>

namespace kiln::sim {
class SimDevice;
}
namespace kiln::runtime::cuda {
class CudaDevice;
}

namespace kiln::compiler {

template <typename DeviceType> struct DeviceHandle {
  std::shared_ptr<DeviceType> device;
  std::shared_ptr<runtime::DeviceMemoryPool> pool;
};

/// The SIMT simulator as a device.
DeviceHandle<sim::SimDevice> simDevice();

/// GPU 0 through the CUDA driver, or the reason there is none (no driver, the
/// toolkit's stub driver, no device...). The first call decides for the process.
Expected<DeviceHandle<runtime::cuda::CudaDevice>> cudaDevice();

} // namespace kiln::compiler
