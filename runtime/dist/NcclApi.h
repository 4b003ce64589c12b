// The NCCL entry points kiln resolves with dlsym, typed from nccl.h's own
// declarations, and the one check that turns an ncclResult_t into an Error.
// Internal to runtime/dist: the only header that includes nccl.h.
#pragma once

#include "runtime/dist/NcclLibrary.h"

#include <nccl.h>

#include <string_view>

namespace kiln::runtime::dist {

class Communicator;

/// One slot per function kiln calls; `decltype(&f)` keeps each signature the header's.
struct NcclApi {
#define KILN_NCCL_FUNCTIONS(X)                                                                     \
  X(ncclGetVersion)                                                                                \
  X(ncclGetErrorString)                                                                            \
  X(ncclGetLastError)                                                                              \
  X(ncclGetUniqueId)                                                                               \
  X(ncclCommInitRank)                                                                              \
  X(ncclCommGetAsyncError)                                                                         \
  X(ncclCommAbort)                                                                                 \
  X(ncclCommDestroy)                                                                               \
  X(ncclAllReduce)                                                                                 \
  X(ncclBroadcast)
#define KILN_NCCL_SLOT(name) decltype(&::name) name = nullptr;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_SLOT)
#undef KILN_NCCL_SLOT
};

/// "<call> failed in <collective> on rank R of N (NCCL): ncclX (NCCL's last error
/// text)". Unavailable for system, internal and remote failures (a peer or a
/// network), InvalidArgument for invalid arguments and usage.
Expected<void> checkNccl(const NcclLibrary &library, ncclResult_t result, std::string_view call,
                         std::string_view collective, const Communicator &communicator,
                         ncclComm_t comm = nullptr);

} // namespace kiln::runtime::dist
