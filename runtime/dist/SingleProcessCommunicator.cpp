// Collectives over one rank: the arguments are checked as every communicator
// checks them, and the data stays as it is.
#include "runtime/dist/SingleProcessCommunicator.h"

#include <fmt/format.h>

namespace kiln::runtime::dist {

Expected<void> SingleProcessCommunicator::allReduce(void *data, int64_t count, DType dtype,
                                                    ReduceOp op, Stream) {
  return checkCollectiveArguments(*this, "allReduce", data, count, dtype, op);
}

Expected<void> SingleProcessCommunicator::broadcast(void *data, int64_t count, DType dtype,
                                                    int root, Stream) {
  return checkCollectiveArguments(*this, "broadcast", data, count, dtype, ReduceOp::Sum, root);
}

Expected<void> SingleProcessCommunicator::barrier() {
  if (aborted_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("barrier on {}: the communicator was aborted",
                                 describeRank(*this)));
  return {};
}

} // namespace kiln::runtime::dist
