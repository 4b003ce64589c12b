// The local rank from the launcher's environment, and its GPU.
#include "tools/kiln/RankGpu.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string>
#include <vector>

namespace kiln::tool {

Expected<std::optional<int>> localRankFromLauncher() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char *value = std::getenv(variable);
    if (!value || !*value)
      continue;
    std::string_view text(value);
    int rank = -1;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error != std::errc() || end != text.data() + text.size() || rank < 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("${} is '{}', expected a local rank (0, 1, ...)", variable,
                                   text));
    return rank;
  }
  return std::optional<int>();
}

Expected<std::string> selectLocalRankGpu(int localRank) {
  std::string chosen = fmt::format("{}", localRank);
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  // Set and empty hides every GPU (as the tests do): it stays so.
  if (visible && !*visible)
    return std::string();
  if (visible) {
    std::vector<std::string> entries;
    std::string_view list(visible);
    for (size_t start = 0; start <= list.size();) {
      size_t end = std::min(list.find(',', start), list.size());
      entries.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
    if (localRank >= static_cast<int>(entries.size()))
      return std::unexpected(
          Error(ErrorCode::InvalidArgument,
                fmt::format("local rank {} needs a GPU of its own, but CUDA_VISIBLE_DEVICES={} "
                            "lists {}",
                            localRank, list, entries.size()))
              .withNote("start at most one rank per visible GPU on each machine"));
    chosen = entries[static_cast<size_t>(localRank)];
  }
  ::setenv("CUDA_VISIBLE_DEVICES", chosen.c_str(), /*overwrite=*/1);
  return chosen;
}

} // namespace kiln::tool
