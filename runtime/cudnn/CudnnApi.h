// The cuDNN entry points kiln resolves with dlsym, typed from the toolkit's own
// declarations, and the one check() that turns a cudnnStatus_t into an Error.
// Internal to runtime/cudnn: the only header that includes cudnn.h.
#pragma once

#include "runtime/cudnn/CudnnLibrary.h"

#include <cudnn.h>

#include <string_view>

namespace kiln::runtime::cudnn {

/// One slot per function kiln calls; `decltype(&f)` keeps each signature the
/// header's, with no link-time dependency on libcudnn.
struct CudnnApi {
#define KILN_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnnGetVersion)                                                                               \
  X(cudnnGetErrorString)                                                                           \
  X(cudnnGetLastErrorString)                                                                       \
  X(cudnnCreate)                                                                                   \
  X(cudnnDestroy)                                                                                  \
  X(cudnnSetStream)                                                                                \
  X(cudnnCreateTensorDescriptor)                                                                   \
  X(cudnnSetTensor4dDescriptor)                                                                    \
  X(cudnnDestroyTensorDescriptor)                                                                  \
  X(cudnnCreateFilterDescriptor)                                                                   \
  X(cudnnSetFilter4dDescriptor)                                                                    \
  X(cudnnDestroyFilterDescriptor)                                                                  \
  X(cudnnCreateConvolutionDescriptor)                                                              \
  X(cudnnSetConvolution2dDescriptor)                                                               \
  X(cudnnSetConvolutionGroupCount)                                                                 \
  X(cudnnSetConvolutionMathType)                                                                   \
  X(cudnnDestroyConvolutionDescriptor)                                                             \
  X(cudnnGetConvolution2dForwardOutputDim)                                                         \
  X(cudnnCreateActivationDescriptor)                                                               \
  X(cudnnSetActivationDescriptor)                                                                  \
  X(cudnnDestroyActivationDescriptor)                                                              \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount)                                                   \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                                        \
  X(cudnnFindConvolutionForwardAlgorithmEx)                                                        \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                                       \
  X(cudnnConvolutionForward)                                                                       \
  X(cudnnConvolutionBiasActivationForward)                                                         \
  X(cudnnAddTensor)                                                                                \
  X(cudnnActivationForward)
#define KILN_CUDNN_SLOT(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_SLOT)
#undef KILN_CUDNN_SLOT
};

/// "<operation> failed: CUDNN_STATUS_X (cuDNN's last error text)". The code
/// follows the status category: Unsupported for NOT_SUPPORTED_*, OutOfMemory
/// for allocation failures, InvalidArgument for BAD_PARAM_*, Unavailable for
/// the rest (not initialized: no GPU; execution failures).
Expected<void> checkCudnn(const CudnnLibrary &library, cudnnStatus_t status,
                          std::string_view operation);

} // namespace kiln::runtime::cudnn
