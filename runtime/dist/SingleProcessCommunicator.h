// The communicator of a process that trains alone: size 1, so every collective
// leaves its buffer as it is. It needs neither MPI nor NCCL.
#pragma once

#include "runtime/dist/Communicator.h"

namespace kiln::runtime::dist {

class SingleProcessCommunicator final : public Communicator {
public:
  explicit SingleProcessCommunicator(MemorySpace space = MemorySpace::Host) : space_(space) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  MemorySpace memorySpace() const override { return space_; }
  std::string_view backendName() const override { return "single process"; }

  /// The sum and the mean of one buffer are the buffer.
  Expected<void> allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                           Stream stream = {}) override;
  Expected<void> broadcast(void *data, int64_t count, DType dtype, int root,
                           Stream stream = {}) override;
  Expected<void> barrier() override;
  void abort() override { aborted_ = true; }
  bool aborted() const override { return aborted_; }

private:
  MemorySpace space_;
  bool aborted_ = false;
};

} // namespace kiln::runtime::dist
