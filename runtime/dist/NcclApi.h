// The NCCL entry points kiln resolves with dlsym, typed from nccl.h's own
// declarations, the one check that turns an ncclResult_t into an Error, and the
// one bounded wait on a communicator. Internal to runtime/dist: the only header
// that includes nccl.h.
#pragma once

#include "runtime/dist/NcclLibrary.h"

#include <nccl.h>

#include <chrono>
#include <functional>
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
// NCCL 2.14's nonblocking communicators, used where the library has them (null
// otherwise): start-up and finalize that can be polled against a deadline.
#define KILN_NCCL_OPTIONAL_FUNCTIONS(X)                                                            \
  X(ncclCommInitRankConfig)                                                                        \
  X(ncclCommFinalize)
#define KILN_NCCL_SLOT(name) decltype(&::name) name = nullptr;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_SLOT)
  KILN_NCCL_OPTIONAL_FUNCTIONS(KILN_NCCL_SLOT)
#undef KILN_NCCL_SLOT
};

/// "<call> failed in <collective> on rank R of N (NCCL): ncclX (NCCL's last error
/// text)". Unavailable for system, internal and remote failures (a peer or a
/// network), InvalidArgument for invalid arguments and usage.
Expected<void> checkNccl(const NcclLibrary &library, ncclResult_t result, std::string_view call,
                         std::string_view collective, const Communicator &communicator,
                         ncclComm_t comm = nullptr);

/// What a bounded wait is for, as its messages name it.
struct NcclWaitSite {
  std::string_view call;       ///< "ncclCommInitRankConfig", "ncclAllReduce", "synchronize"
  std::string_view collective; ///< "start-up", "allReduce #3 (1001 f32, sum)"
};

/// How often a bounded wait asks NCCL and the stream how far they are.
inline constexpr std::chrono::microseconds kNcclPollInterval{200};

/// Waits until NCCL has no operation in progress on `comm` (ncclCommGetAsyncError
/// says ncclSuccess) and `finished()`, when given, returns true. An asynchronous
/// error fails at once, with checkNccl's text; after `timeout` the wait fails with
/// "<collective> on <rank> timed out after T s (<call>)", and `host`, when given,
/// meets the other ranks at a barrier whose own failure (the ranks that never
/// arrived) becomes a note. On every failure `comm` has been aborted: the caller
/// must neither use nor destroy it. `rankOf` names the rank in messages.
Expected<void> waitForNccl(const NcclLibrary &library, ncclComm_t comm,
                           const Communicator &rankOf, Communicator *host,
                           std::chrono::milliseconds timeout, const NcclWaitSite &site,
                           const std::function<Expected<bool>()> &finished = {});

/// An NCCL communicator this rank has joined.
struct JoinedNccl {
  ncclComm_t comm = nullptr;
  /// Created with config.blocking = 0: every call may return ncclInProgress and
  /// is then waited for with waitForNccl.
  bool nonblocking = false;
};

/// Joins the NCCL communicator of host.size() ranks as host.rank(), bounded by
/// `timeout`: ncclCommInitRankConfig with config.blocking = 0, polled with
/// waitForNccl, where the library has it (NCCL 2.14 and later); the blocking
/// ncclCommInitRank, which waits as long as a missing peer keeps it, otherwise.
Expected<JoinedNccl> joinNcclCommunicator(const NcclLibrary &library, Communicator &host,
                                          const ncclUniqueId &id,
                                          std::chrono::milliseconds timeout);

} // namespace kiln::runtime::dist
