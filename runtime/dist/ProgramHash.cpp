// Every rank's program hash, gathered with one all-reduce: rank r writes its hash
// into slot r of a zeroed vector, so the integer sum is the vector of all hashes.
#include "runtime/dist/ProgramHash.h"

#include <fmt/format.h>

#include <bit>
#include <map>
#include <vector>

namespace kiln::runtime::dist {

Expected<void> verifySameProgram(Communicator &communicator, uint64_t programHash) {
  if (communicator.memorySpace() != MemorySpace::Host)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("verifySameProgram on {}: it needs a host communicator (the "
                                 "one the device communicator was opened with)",
                                 describeRank(communicator)));
  int size = communicator.size();
  std::vector<int64_t> hashes(static_cast<size_t>(size), 0);
  hashes[communicator.rank()] = std::bit_cast<int64_t>(programHash);
  KILN_TRY_VOID(communicator.allReduce(hashes.data(), size, DType::I64, ReduceOp::Sum));

  std::map<uint64_t, std::vector<int>> ranksByHash;
  for (int rank = 0; rank < size; ++rank)
    ranksByHash[std::bit_cast<uint64_t>(hashes[rank])].push_back(rank);
  if (ranksByHash.size() == 1)
    return {};
  std::vector<std::string> groups;
  for (const auto &[hash, ranks] : ranksByHash)
    groups.push_back(fmt::format("rank{} {} {} {:016x}", ranks.size() > 1 ? "s" : "",
                                 fmt::join(ranks, ", "), ranks.size() > 1 ? "have" : "has",
                                 hash));
  Error error(ErrorCode::InvalidArgument,
              fmt::format("the ranks compiled different programs: {} (seen on {})",
                          fmt::join(groups, "; "), describeRank(communicator)));
  error.withNote("every rank must build the same model with the same options");
  return std::unexpected(std::move(error));
}

} // namespace kiln::runtime::dist
