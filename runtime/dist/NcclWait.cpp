// Bounded waits on NCCL: joining a communicator, and waiting for what it has in
// progress, so that a peer that never comes is an Error within the timeout.
#include "runtime/dist/NcclApi.h"

#include "runtime/dist/Communicator.h"

#include <fmt/format.h>

#include <thread>

namespace kiln::runtime::dist {

Expected<void> waitForNccl(const NcclLibrary &library, ncclComm_t comm,
                           const Communicator &rankOf, Communicator *host,
                           std::chrono::milliseconds timeout, const NcclWaitSite &site,
                           const std::function<Expected<bool>()> &finished) {
  const NcclApi &api = *library.api;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto failWith = [&](Error error) -> Expected<void> {
    api.ncclCommAbort(comm);
    return std::unexpected(std::move(error));
  };
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t asked = api.ncclCommGetAsyncError(comm, &state);
    if (asked != ncclSuccess)
      state = asked;
    if (state != ncclSuccess && state != ncclInProgress)
      return failWith(checkNccl(library, state, site.call, site.collective, rankOf, comm).error());
    if (state == ncclSuccess) {
      Expected<bool> done = finished ? finished() : Expected<bool>(true);
      if (!done)
        return failWith(std::move(done).error());
      if (*done)
        return {};
    }
    if (std::chrono::steady_clock::now() >= deadline)
      break;
    std::this_thread::sleep_for(kNcclPollInterval);
  }
  Error error(ErrorCode::Unavailable,
              fmt::format("{} on {} timed out after {:g} s ({})", site.collective,
                          describeRank(rankOf), timeout.count() / 1000.0, site.call));
  api.ncclCommAbort(comm);
  // The ranks whose hosts still answer reach the barrier; its error names the others.
  if (host) {
    if (auto met = host->barrier(); !met)
      error.withNote(met.error().message());
    else
      error.withNote("every rank's host reached a barrier: a device, not a process, is stuck");
  }
  return std::unexpected(std::move(error));
}

Expected<JoinedNccl> joinNcclCommunicator(const NcclLibrary &library, Communicator &host,
                                          const ncclUniqueId &id,
                                          std::chrono::milliseconds timeout) {
  const NcclApi &api = *library.api;
  JoinedNccl joined;
  if (!api.ncclCommInitRankConfig) {
    // NCCL before 2.14: ncclCommInitRank returns once every rank has joined, or never.
    KILN_TRY_VOID(checkNccl(library, api.ncclCommInitRank(&joined.comm, host.size(), id, host.rank()),
                            "ncclCommInitRank", "start-up", host));
    return joined;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  joined.nonblocking = true;
  ncclResult_t started =
      api.ncclCommInitRankConfig(&joined.comm, host.size(), id, host.rank(), &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    auto failed = checkNccl(library, started, "ncclCommInitRankConfig", "start-up", host,
                            joined.comm);
    if (joined.comm)
      api.ncclCommAbort(joined.comm);
    return std::unexpected(std::move(failed).error());
  }
  KILN_TRY_VOID(waitForNccl(library, joined.comm, host, &host, timeout,
                            {"ncclCommInitRankConfig", "start-up"}));
  return joined;
}

} // namespace kiln::runtime::dist
