// Encoding the tensor maps a kernel's bulk tensor copies read through (cuTensorMapEncodeTiled)
// from the launch's buffer addresses. Internal to runtime/cuda.
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/CudaDriver.h"

#include <string_view>

namespace kiln::runtime::cuda {

/// Encodes `map` over the buffer at `base` into `out`; an error names the kernel and the map's
/// parameter (a misaligned address, a stride or box the driver refuses).
Expected<void> encodeTensorMap(const CudaDriver &driver, const TensorMapArg &map, DevicePtr base,
                               std::string_view kernel, CUtensorMap &out);

} // namespace kiln::runtime::cuda
