// cuDNN 9 as kiln uses it: an optional library found and opened with dlopen,
// so kiln builds and runs where it is missing (its own kernels run anyway).
// This header needs no cuDNN header; the entry points live in CudnnApi.h.
#pragma once

#include "support/Error.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime::cudnn {

struct CudnnApi;

/// An opened cuDNN. Never unloaded: its sub-libraries and handles may outlive
/// any one user, and the process keeps it as it keeps libcuda.
struct CudnnLibrary {
  std::string libraryPath;
  size_t version = 0; ///< cudnnGetVersion(): 91900 for 9.19.0
  std::unique_ptr<const CudnnApi> api;

  CudnnLibrary();
  ~CudnnLibrary();
  CudnnLibrary(CudnnLibrary &&) noexcept;
  CudnnLibrary &operator=(CudnnLibrary &&) noexcept;

  /// "9.19.0".
  std::string versionText() const;
};

/// The cuDNN the environment selects, opened on first use and kept for the
/// process. $KILN_CUDNN, when set, is the only library tried; otherwise
/// libcudnn.so.9 through the dynamic loader's search, then
/// /usr/local/cuda/lib64 and $CUDA_HOME/lib64. Only cuDNN 9 is accepted. The
/// outcome is cached per value of $KILN_CUDNN (tests change it). Errors are
/// ErrorCode::Unavailable, name every path tried, and say that cuDNN is optional.
Expected<const CudnnLibrary *> cudnnLibrary();

/// Where cudnnLibrary() looks, in order, given the current environment.
std::vector<std::string> libcudnnCandidates();

/// The loaded cuDNN's version ("9.19.0"), or "unavailable" when none loads:
/// part of the tuning database's target fingerprint.
std::string cudnnVersionText();

} // namespace kiln::runtime::cudnn
