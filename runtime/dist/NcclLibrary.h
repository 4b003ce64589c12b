// NCCL as kiln uses it: libnccl.so.2 found and opened with dlopen, so kiln builds
// and runs where it is missing (a single process, or MPI on host buffers, needs
// no NCCL). This header needs no NCCL header; the entry points are in NcclApi.h.
#pragma once

#include "support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime::dist {

struct NcclApi;

/// An opened NCCL. Never unloaded: communicators and NCCL's own threads may outlive
/// any one user.
struct NcclLibrary {
  std::string libraryPath;
  int version = 0; ///< ncclGetVersion(): 22805 for 2.28.5
  std::unique_ptr<const NcclApi> api;

  NcclLibrary();
  ~NcclLibrary();
  NcclLibrary(NcclLibrary &&) noexcept;
  NcclLibrary &operator=(NcclLibrary &&) noexcept;

  /// "2.28.5".
  std::string versionText() const;
};

/// The NCCL the environment selects, opened on first use and kept for the process.
/// $KILN_LIBNCCL, when set, is the only library tried; otherwise libnccl.so.2 through
/// the dynamic loader's search, then /usr/local/cuda/lib64 and $CUDA_HOME/lib64. The
/// outcome is cached per value of $KILN_LIBNCCL (tests change it). Errors are
/// ErrorCode::Unavailable and name every path tried with dlerror()'s reason.
Expected<const NcclLibrary *> ncclLibrary();

/// Where ncclLibrary() looks, in order, given the current environment.
std::vector<std::string> libncclCandidates();

} // namespace kiln::runtime::dist
