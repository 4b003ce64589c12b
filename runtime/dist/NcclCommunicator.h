// The NCCL communicator for device buffers: collectives enqueued on a CUDA
// stream, over the ranks of a host communicator that launched the group and
// exchanged NCCL's unique id.
#pragma once

#include "runtime/dist/Communicator.h"
#include "runtime/dist/CommunicatorOptions.h"

#include <chrono>
#include <memory>

// NCCL's opaque communicator, so this header needs no nccl.h.
struct ncclComm;

namespace kiln::runtime::cuda {
class CudaDevice;
}

namespace kiln::runtime::dist {

struct NcclLibrary;

/// Collectives on device addresses (a DevicePtr cast to void *), enqueued on the
/// stream given (the null Stream: the device's default stream) and returning at once;
/// synchronize() waits for them, bounded by the timeout.
class NcclCommunicator final : public Communicator {
public:
  /// `nonblocking`: `comm` was created with config.blocking = 0, so any call may
  /// return ncclInProgress and is then waited for, bounded by `timeout`.
  NcclCommunicator(const NcclLibrary &library, std::shared_ptr<cuda::CudaDevice> device,
                   Communicator &host, ncclComm *comm, bool nonblocking,
                   std::chrono::milliseconds timeout);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator &) = delete;
  NcclCommunicator &operator=(const NcclCommunicator &) = delete;

  int rank() const override;
  int size() const override;
  MemorySpace memorySpace() const override { return MemorySpace::Device; }
  std::string_view backendName() const override { return "NCCL"; }

  /// f64, f32, f16, bf16, i64, i32 and i8 buffers; Mean is NCCL's average.
  Expected<void> allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                           Stream stream = {}) override;
  Expected<void> broadcast(void *data, int64_t count, DType dtype, int root,
                           Stream stream = {}) override;
  /// The host communicator's barrier.
  Expected<void> barrier() override;
  void abort() override;
  bool aborted() const override { return aborted_; }
  /// The host communicator this one was opened over.
  Communicator &hostCommunicator() override { return host_; }

  /// Waits until the work enqueued on `stream` so far has finished, polling NCCL's
  /// asynchronous error. When a peer never joins, it fails after the timeout naming
  /// the collectives enqueued since the last synchronize, aborts the communicator,
  /// and adds the host communicator's view (which ranks do not reach a barrier) as
  /// a note. The device executor calls it after a step with collectives.
  Expected<void> synchronize(Stream stream) override;

  cuda::CudaDevice &device() const { return *device_; }

private:
  /// Checks the ncclResult_t (an int here: nccl.h stays out of this header) that
  /// NCCL returned for a collective just enqueued, waiting (bounded) when a
  /// nonblocking communicator says it is still in progress, and remembers the
  /// collective for synchronize()'s messages.
  Expected<void> enqueued(int result, std::string_view call, std::string collective);
  /// "allReduce #3 (1001 f32, sum)", or the first and how many follow it.
  std::string pendingCollectives() const;

  const NcclLibrary &library_;
  std::shared_ptr<cuda::CudaDevice> device_;
  Communicator &host_;
  ncclComm *comm_;
  bool nonblocking_;
  std::chrono::milliseconds timeout_;
  bool aborted_ = false;
  int64_t sequence_ = 0;         ///< collectives enqueued so far, for "#n" in messages
  std::string firstPending_;     ///< the first collective since the last synchronize
  int64_t pendingCount_ = 0;     ///< how many were enqueued since then
};

/// Opens NCCL over the ranks of `host` (a host communicator that outlives the result),
/// each rank on GPU `deviceOrdinal`. Every rank first loads NCCL and opens its GPU, and
/// the ranks compare outcomes, so that all fail together with an error naming the ranks
/// that could not (and each its own reason: NCCL missing, no CUDA driver, no such GPU)
/// instead of waiting for them. Rank 0 then creates NCCL's unique id and broadcasts it.
Expected<std::unique_ptr<NcclCommunicator>> openNcclCommunicator(Communicator &host,
                                                                 int deviceOrdinal,
                                                                 const CommunicatorOptions &options = {});

} // namespace kiln::runtime::dist
