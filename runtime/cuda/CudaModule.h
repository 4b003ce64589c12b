// A module loaded on a GPU (CUmodule) and the kernels looked up in it, each
// ready to launch with fixed launch dimensions.
#pragma once

#include "runtime/Device.h"
#include "support/Error.h"

#include <memory>
#include <string>

struct CUmod_st;

namespace kiln::runtime::cuda {

class CudaDevice;

/// A loaded module. Unloaded when the last reference goes, which kernels hold:
/// a kernel keeps its module (and the module its device) alive.
class CudaModule : public std::enable_shared_from_this<CudaModule> {
public:
  CudaModule(std::shared_ptr<CudaDevice> device, CUmod_st *module, std::string description);
  ~CudaModule();
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;

  /// The kernel `name`, launched with `dims` on every launch. NotFound when the
  /// module has no such kernel; Unsupported when a parameter is not a pointer
  /// (kiln kernels take only buffers); InvalidArgument for impossible dims.
  Expected<std::shared_ptr<const DeviceKernel>> kernel(const std::string &name,
                                                       LaunchDims dims) const;

  const std::string &description() const { return description_; }
  CudaDevice &device() const { return *device_; }

private:
  std::shared_ptr<CudaDevice> device_;
  CUmod_st *module_;
  std::string description_;
};

} // namespace kiln::runtime::cuda
