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

/// The driver's entry points: (member, symbol, PFN version) rows, each slot typed by the PFN
/// typedef of the exact version kDriverAbiVersion resolves to.
struct CudaDriverTable {
#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                              \
  X(getErrorName, cuGetErrorName, 6000)                                                            \
  X(getErrorString, cuGetErrorString, 6000)                                                        \
  X(deviceGetCount, cuDeviceGetCount, 2000)                                                        \
  X(deviceGet, cuDeviceGet, 2000)                                                                  \
  X(deviceGetName, cuDeviceGetName, 2000)                                                          \
  X(deviceGetAttribute, cuDeviceGetAttribute, 2000)                                                \
  X(deviceTotalMem, cuDeviceTotalMem, 3020)                                                        \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)                                              \
  X(primaryCtxRelease, cuDevicePrimaryCtxRelease, 11000)                                           \
  X(ctxGetCurrent, cuCtxGetCurrent, 4000)                                                          \
  X(ctxSetCurrent, cuCtxSetCurrent, 4000)                                                          \
  X(memGetInfo, cuMemGetInfo, 3020)                                                                \
  X(memAlloc, cuMemAlloc, 3020)                                                                    \
  X(memFree, cuMemFree, 3020)                                                                      \
  X(memHostAlloc, cuMemHostAlloc, 2020)                                                            \
  X(memFreeHost, cuMemFreeHost, 2000)                                                              \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync, 3020)                                                      \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync, 3020)                                                      \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync, 3020)                                                      \
  X(memsetD8Async, cuMemsetD8Async, 3020)                                                          \
  X(streamCreate, cuStreamCreate, 2000)                                                            \
  X(streamDestroy, cuStreamDestroy, 4000)                                                          \
  X(streamSynchronize, cuStreamSynchronize, 2000)                                                  \
  X(streamWaitEvent, cuStreamWaitEvent, 3020)                                                      \
  X(eventCreate, cuEventCreate, 2000)                                                              \
  X(eventDestroy, cuEventDestroy, 4000)                                                            \
  X(eventRecord, cuEventRecord, 2000)                                                              \
  X(eventQuery, cuEventQuery, 2000)                                                                \
  X(eventElapsedTime, cuEventElapsedTime, 2000)                                                    \
  X(moduleLoadDataEx, cuModuleLoadDataEx, 2010)                                                    \
  X(moduleUnload, cuModuleUnload, 2000)                                                            \
  X(moduleGetFunction, cuModuleGetFunction, 2000)                                                  \
  X(funcGetParamInfo, cuFuncGetParamInfo, 12040)                                                   \
  X(funcSetAttribute, cuFuncSetAttribute, 9000)                                                    \
  X(launchKernel, cuLaunchKernel, 4000)                                                            \
  X(tensorMapEncodeTiled, cuTensorMapEncodeTiled, 12000)                                           \
  X(streamBeginCapture, cuStreamBeginCapture, 10010)                                               \
  X(streamEndCapture, cuStreamEndCapture, 10000)                                                   \
  X(graphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040)                                 \
  X(graphLaunch, cuGraphLaunch, 10000)                                                             \
  X(graphDestroy, cuGraphDestroy, 10000)                                                           \
  X(graphExecDestroy, cuGraphExecDestroy, 10000)
#define KILN_CUDA_DRIVER_SLOT(member, symbol, version) PFN_##symbol##_v##version member = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_SLOT)
#undef KILN_CUDA_DRIVER_SLOT
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
