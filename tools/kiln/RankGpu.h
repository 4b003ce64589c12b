// Which GPU a rank of data-parallel training uses: the one of its local rank
// (its index among the ranks on its machine), as the launcher numbers them.
#pragma once

#include "support/Error.h"

#include <optional>

namespace kiln::tool {

/// This process's rank among the ranks on its machine, from the launcher's
/// variables (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID,
/// PMIx's PMIX_LOCAL_RANK, Slurm's SLURM_LOCALID); nullopt when none is set.
/// InvalidArgument when one holds something other than a rank.
Expected<std::optional<int>> localRankFromLauncher();

/// Makes GPU `localRank` the only one this process sees, as GPU 0 (where kiln's
/// CUDA device and NCCL open it), by setting CUDA_VISIBLE_DEVICES before
/// anything starts CUDA: to the local rank, or to the local rank's entry of a
/// list the launcher or the user set. InvalidArgument when that list has no such
/// entry. Returns the GPU chosen, as CUDA_VISIBLE_DEVICES names it; an empty
/// CUDA_VISIBLE_DEVICES (no GPU visible) is left as it is, and gives "".
Expected<std::string> selectLocalRankGpu(int localRank);

} // namespace kiln::tool
