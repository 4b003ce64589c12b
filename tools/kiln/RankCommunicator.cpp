// Which communicator a rank of `kiln train` trains with, decided alike on every rank.
#include "tools/kiln/RankCommunicator.h"

#include "runtime/dist/NcclCommunicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace kiln::tool {

using runtime::dist::Communicator;

namespace {

/// Whether the training program runs on a GPU. --target auto decides per rank, so
/// the ranks compare their choices: one program needs one kind of communicator.
Expected<bool> trainsOnGpu(Communicator &host, const CompileOptions &compile) {
  if (compile.target != TargetKind::Auto)
    return compile.target == TargetKind::Cuda;
  Expected<TargetChoice> choice = chooseTarget(compile);
  bool onGpu = choice && choice->kind == TargetKind::Cuda;
  std::vector<int32_t> gpuByRank(static_cast<size_t>(host.size()), 0);
  gpuByRank[static_cast<size_t>(host.rank())] = onGpu ? 1 : 0;
  KILN_TRY_VOID(host.allReduce(gpuByRank.data(), host.size(), DType::I32,
                               runtime::dist::ReduceOp::Sum));
  auto withGpu = std::ranges::count(gpuByRank, 1);
  if (withGpu == 0 || withGpu == host.size())
    return withGpu > 0;
  std::vector<int> withoutGpu;
  for (int rank = 0; rank < host.size(); ++rank)
    if (!gpuByRank[static_cast<size_t>(rank)])
      withoutGpu.push_back(rank);
  Error error(ErrorCode::Unavailable,
              fmt::format("--target auto found a usable GPU on {} of {} ranks but not on rank{} "
                          "{}: the ranks must all train on GPUs or all on the CPU",
                          withGpu, host.size(), withoutGpu.size() > 1 ? "s" : "",
                          fmt::join(withoutGpu, ", ")));
  if (!onGpu)
    error.withNote(choice ? choice->fallbackReason : choice.error().message());
  return std::unexpected(std::move(error).withNote("give every rank a GPU, or use --target cpu"));
}

} // namespace

Expected<std::shared_ptr<Communicator>> openRankCommunicator(std::shared_ptr<Communicator> host,
                                                             const CompileOptions &compile) {
  KILN_TRY(bool onGpu, trainsOnGpu(*host, compile));
  if (!onGpu)
    return host;
  // GPU 0 is the local rank's: selectLocalRankGpu narrowed CUDA_VISIBLE_DEVICES to it.
  KILN_TRY(std::unique_ptr<runtime::dist::NcclCommunicator> nccl,
           runtime::dist::openNcclCommunicator(*host, /*deviceOrdinal=*/0));
  // NCCL's communicator refers to the host one: the deleter keeps it alive as long.
  return std::shared_ptr<Communicator>(nccl.release(),
                                       [host](Communicator *communicator) { delete communicator; });
}

} // namespace kiln::tool
