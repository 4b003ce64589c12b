// What every communicator shares: the names in messages and the argument checks.
#include "runtime/dist/Communicator.h"

#include <fmt/format.h>

namespace kiln::runtime::dist {

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return "sum";
  case ReduceOp::Mean: return "mean";
  }
  return "?";
}

std::string describeRank(const Communicator &communicator) {
  return fmt::format("rank {} of {} ({})", communicator.rank(), communicator.size(),
                     communicator.backendName());
}

Expected<void> checkCollectiveArguments(const Communicator &communicator,
                                        std::string_view collective, const void *data,
                                        int64_t count, DType dtype, ReduceOp op, int root) {
  auto fail = [&](std::string why) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} on {}: {}", collective, describeRank(communicator), why));
  };
  if (count < 0)
    return fail(fmt::format("negative element count {}", count));
  if (count > 0 && !data)
    return fail(fmt::format("null buffer for {} {} elements", count, dtypeName(dtype)));
  if (root < 0 || root >= communicator.size())
    return fail(fmt::format("root rank {} is outside 0..{}", root, communicator.size() - 1));
  if (op == ReduceOp::Mean && !isFloatingPoint(dtype))
    return fail(fmt::format("a mean needs a floating-point buffer, not {}", dtypeName(dtype)));
  if (communicator.aborted())
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} on {}: the communicator was aborted by an earlier failure",
                                 collective, describeRank(communicator)));
  return {};
}

} // namespace kiln::runtime::dist
