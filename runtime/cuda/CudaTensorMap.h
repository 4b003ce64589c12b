// Encoding the tensor maps a kernel's bulk tensor copies read through (cuTensorMapEncodeTiled)
// from the launch's buffer addresses. Internal to runtime/cuda.
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/CudaDriver.h"

#include <string_view>

namespace kiln::runtime::cuda {

/// The rules of cuTensorMapEncodeTiled (cuda.h) that kiln's maps must meet: a rank of 1 to 5,
/// a 16-byte aligned base, dims of 1 to 2^32 elements, strides in positive multiples of 16
/// bytes below 2^40, boxes of 1 to 256 elements whose inner extent is a multiple of 16 bytes
/// and, swizzled, at most 128. Checked before the driver is asked, so a map it would refuse
/// with a bare CUDA_ERROR_INVALID_VALUE (from a corrupt bundle, or a schedule past the
/// hardware's limits) says which rule it breaks, naming the kernel and the map's parameter.
Expected<void> checkTensorMap(const TensorMapArg &map, DevicePtr base, std::string_view kernel);

/// Encodes `map` over the buffer at `base` into `out` (after checkTensorMap); an error names
/// the kernel and the map's parameter.
Expected<void> encodeTensorMap(const CudaDriver &driver, const TensorMapArg &map, DevicePtr base,
                               std::string_view kernel, CUtensorMap &out);

} // namespace kiln::runtime::cuda
