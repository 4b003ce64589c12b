// The CUDA driver API as kiln uses it: libcuda found and opened with dlopen,
// the few entry points resolved into one table, and the one check() through
// which every CUresult becomes a kiln Error. Internal to runtime/cuda: it is
// the only header that includes cuda.h.
#pragma once

#include "support/Error.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::cuda {

/// The CUDA version whose ABI the table's signatures follow. Every entry point
/// is asked of cuGetProcAddress at this version, so a newer driver hands back
/// the variant these signatures describe (cuMemAlloc_v2, cuStreamBeginCapture_v2,
/// cuDevicePrimaryCtxRelease_v2, ...), never a later one with another signature.
/// 12.4 is also the oldest driver kiln accepts: cuFuncGetParamInfo appeared there.
constexpr int kDriverAbiVersion = 12040;

/// The driver's entry points, each typed by the PFN typedef of the exact
/// version kDriverAbiVersion resolves to.
struct CudaDriverTable {
  PFN_cuGetErrorName_v6000 getErrorName = nullptr;
  PFN_cuGetErrorString_v6000 getErrorString = nullptr;
  PFN_cuDeviceGetCount_v2000 deviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 deviceGet = nullptr;
  PFN_cuDeviceGetName_v2000 deviceGetName = nullptr;
  PFN_cuDeviceGetAttribute_v2000 deviceGetAttribute = nullptr;
  PFN_cuDeviceTotalMem_v3020 deviceTotalMem = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 primaryCtxRelease = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctxGetCurrent = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctxSetCurrent = nullptr;
  PFN_cuMemGetInfo_v3020 memGetInfo = nullptr;
  PFN_cuMemAlloc_v3020 memAlloc = nullptr;
  PFN_cuMemFree_v3020 memFree = nullptr;
  PFN_cuMemHostAlloc_v2020 memHostAlloc = nullptr;
  PFN_cuMemFreeHost_v2000 memFreeHost = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 memcpyHtoDAsync = nullptr;
  PFN_cuMemcpyDtoHAsync_v3020 memcpyDtoHAsync = nullptr;
  PFN_cuMemcpyDtoDAsync_v3020 memcpyDtoDAsync = nullptr;
  PFN_cuMemsetD8Async_v3020 memsetD8Async = nullptr;
  PFN_cuStreamCreate_v2000 streamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 streamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 streamSynchronize = nullptr;
  PFN_cuStreamWaitEvent_v3020 streamWaitEvent = nullptr;
  PFN_cuEventCreate_v2000 eventCreate = nullptr;
  PFN_cuEventDestroy_v4000 eventDestroy = nullptr;
  PFN_cuEventRecord_v2000 eventRecord = nullptr;
  PFN_cuEventQuery_v2000 eventQuery = nullptr;
  PFN_cuEventElapsedTime_v2000 eventElapsedTime = nullptr;
  PFN_cuModuleLoadDataEx_v2010 moduleLoadDataEx = nullptr;
  PFN_cuModuleUnload_v2000 moduleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 moduleGetFunction = nullptr;
  PFN_cuFuncGetParamInfo_v12040 funcGetParamInfo = nullptr;
  PFN_cuFuncSetAttribute_v9000 funcSetAttribute = nullptr;
  PFN_cuLaunchKernel_v4000 launchKernel = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 tensorMapEncodeTiled = nullptr;
  PFN_cuStreamBeginCapture_v10010 streamBeginCapture = nullptr;
  PFN_cuStreamEndCapture_v10000 streamEndCapture = nullptr;
  PFN_cuGraphInstantiateWithFlags_v11040 graphInstantiateWithFlags = nullptr;
  PFN_cuGraphLaunch_v10000 graphLaunch = nullptr;
  PFN_cuGraphDestroy_v10000 graphDestroy = nullptr;
  PFN_cuGraphExecDestroy_v10000 graphExecDestroy = nullptr;
};

/// An opened and initialized driver. Never unloaded: libcuda does not support it.
struct CudaDriver {
  std::string libraryPath;
  int version = 0; ///< cuDriverGetVersion: 13000 for CUDA 13.0
  CudaDriverTable api;

  /// The one place a CUresult becomes an Error: "<operation> failed: CUDA_ERROR_X
  /// (the driver's text)", naming `kernel` when the call concerned one. The code
  /// follows the result: OutOfMemory, CompileError for rejected PTX or images,
  /// NotFound for a missing kernel, InvalidArgument for bad values, Unavailable
  /// for a missing or failed device (sticky faults leave the context unusable).
  Expected<void> check(CUresult result, std::string_view operation,
                       std::string_view kernel = {}) const;

  /// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
  std::string describeResult(CUresult result) const;

  /// "13.0" for 13000.
  std::string versionText() const;
};

/// The driver the environment selects, opened and initialized on first use and
/// kept for the process. $KILN_LIBCUDA, when set, is the only library tried;
/// otherwise libcuda.so.1 is searched where the dynamic loader and the usual
/// driver directories have it. The outcome is cached per value of $KILN_LIBCUDA,
/// so changing the variable (tests do) gives a fresh, equally cached, attempt.
Expected<const CudaDriver *> cudaDriver();

/// Where cudaDriver() looks, in order, given the current environment.
std::vector<std::string> libcudaCandidates();

} // namespace kiln::runtime::cuda
