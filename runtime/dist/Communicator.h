// The collective-communication interface of data-parallel training: a group of
// ranks that all-reduce, broadcast and meet at barriers (docs/distributed.md).
// Implementations: a single process (no library), MPI for host buffers (the
// libkiln_mpi plugin) and NCCL for device buffers.
#pragma once

#include "runtime/Device.h"
#include "support/DType.h"
#include "support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime::dist {

/// Where a communicator's buffers live.
enum class MemorySpace { Host, Device };

/// How all-reduce combines the ranks' buffers. Mean is the sum divided by the
/// number of ranks, for floating-point buffers only.
enum class ReduceOp { Sum, Mean };

std::string_view reduceOpName(ReduceOp op);

/// One process's membership in a group of `size()` ranks.
///
/// Every rank calls the same collectives in the same order; each one is in place
/// on a buffer of `count` elements of `dtype`. Host communicators block the calling
/// thread until the collective has finished or failed; device communicators enqueue
/// it on `stream` and return. Overlapping communication with computation is the
/// caller's: a communication thread it owns (which alone calls the communicator,
/// in the order every rank agrees on) and, for device buffers, a communication
/// stream ordered against the compute stream with events. A communicator is not
/// safe to call from two threads at once.
///
/// A collective whose peers do not all arrive within the timeout fails with an
/// Error naming the missing ranks, and the communicator is aborted: every later
/// call fails at once, and the process should report and exit.
class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual MemorySpace memorySpace() const = 0;
  /// "single process", "MPI", "NCCL": for messages.
  virtual std::string_view backendName() const = 0;

  /// Combines every rank's `data` with `op` and leaves the result in every rank's `data`.
  /// A host communicator ignores `stream`.
  virtual Expected<void> allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                                   Stream stream = {}) = 0;
  /// Copies rank `root`'s `data` into every other rank's `data`.
  virtual Expected<void> broadcast(void *data, int64_t count, DType dtype, int root,
                                   Stream stream = {}) = 0;
  /// Returns once every rank has called it (host threads only: enqueued device work
  /// is not waited for).
  virtual Expected<void> barrier() = 0;
  /// Gives up on the group: pending operations are abandoned and every later call
  /// fails. Idempotent; the other ranks learn of it through their own timeouts.
  virtual void abort() = 0;
  virtual bool aborted() const = 0;
  /// Waits until the collectives this communicator enqueued on `stream` (and what
  /// came before them there) have finished, at most the timeout; a failure names the
  /// collectives and aborts the communicator. Host collectives have finished when
  /// they return, so a host communicator has nothing to wait for.
  virtual Expected<void> synchronize(Stream stream) {
    (void)stream;
    return {};
  }
  /// The host communicator of the same ranks, for the small host-side exchanges around
  /// device collectives (a trainer's agreement on shards, program and outcomes): a host
  /// communicator is its own; a device one returns the host communicator it was opened over.
  virtual Communicator &hostCommunicator() { return *this; }
};

/// "rank 1 of 3 (MPI)": how messages name the calling process.
std::string describeRank(const Communicator &communicator);

/// Checks the arguments every implementation shares: a non-negative count, a
/// buffer unless the count is zero, a root in range, Mean on floating point only.
/// `collective` names the call in the message.
Expected<void> checkCollectiveArguments(const Communicator &communicator,
                                        std::string_view collective, const void *data,
                                        int64_t count, DType dtype, ReduceOp op, int root = 0);

} // namespace kiln::runtime::dist
