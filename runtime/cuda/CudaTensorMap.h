// Encoding the tensor maps a kernel's bulk tensor copies read through (cuTensorMapEncodeTiled)
// from the launch's buffer addresses, and keeping them while the addresses stay. Internal to
// runtime/cuda.
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/CudaDriver.h"

#include <optional>
#include <string_view>
#include <vector>

namespace kiln::runtime::cuda {

/// `map` against cuda.h's rules for cuTensorMapEncodeTiled (runtime/TensorMapRules.h), a dtype
/// the copy engine moves and a 16-byte aligned `base`, checked before the driver is asked, so
/// a map it would refuse with a bare CUDA_ERROR_INVALID_VALUE (from a corrupt bundle, or a
/// schedule past the hardware's limits) says which rule it breaks, naming the kernel and the
/// map's parameter.
Expected<void> checkTensorMap(const TensorMapArg &map, DevicePtr base, std::string_view kernel);

/// Encodes `map` over the buffer at `base` into `out` (after checkTensorMap); an error names
/// the kernel and the map's parameter.
Expected<void> encodeTensorMap(const CudaDriver &driver, const TensorMapArg &map, DevicePtr base,
                               std::string_view kernel, CUtensorMap &out);

/// A kernel's tensor maps, encoded once per buffer address: a launch on the buffers of the
/// last one (a plan runs each kernel on the same arena run after run) reuses the maps, and a
/// map whose buffer moved is encoded again, alone. Not thread-safe: the kernel serializes
/// its launches around it.
class TensorMapCache {
public:
  explicit TensorMapCache(std::vector<TensorMapArg> maps);

  /// The maps for a launch whose buffer arguments are `args`, in the order of the maps given;
  /// an encoding error leaves that map to be encoded again next time.
  Expected<const CUtensorMap *> forLaunch(const CudaDriver &driver, const DevicePtr *args,
                                          std::string_view kernel);

private:
  std::vector<TensorMapArg> args_;
  std::vector<CUtensorMap> maps_;
  std::vector<std::optional<DevicePtr>> bases_; ///< what each map was encoded for
};

} // namespace kiln::runtime::cuda
