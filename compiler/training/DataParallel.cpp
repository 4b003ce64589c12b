// Host collectives the Trainer runs outside its compiled programs: at start,
// per step (the global loss) and around checkpoints.
#include "compiler/training/DataParallel.h"

#include "compiler/training/ProgramSignature.h"
#include "runtime/dist/ProgramHash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::training {

using runtime::dist::Communicator;
using runtime::dist::ReduceOp;

Expected<int64_t> batchRows(const std::vector<std::pair<std::string, ir::TensorType>> &inputs) {
  if (inputs.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "data-parallel training: the model has no input, so there is no batch to "
                     "shard across the ranks");
  const auto &[firstName, firstType] = inputs.front();
  for (const auto &[name, type] : inputs)
    if (type.rank() == 0 || type.shape[0] != firstType.shape[0] || type.shape[0] < 1)
      return makeError(ErrorCode::ShapeMismatch,
                       fmt::format("data-parallel training: every model input must be "
                                   "batch-major with the same rows (at least 1), but '{}' is {} "
                                   "and '{}' is {}",
                                   firstName, firstType.str(), name, type.str()));
  return firstType.shape[0];
}

Expected<ShardPlan> agreeOnShards(Communicator &communicator, int64_t rows) {
  ShardPlan plan;
  plan.rows = rows;
  plan.rowsByRank.assign(static_cast<size_t>(communicator.size()), 0);
  plan.rowsByRank[static_cast<size_t>(communicator.rank())] = rows;
  KILN_TRY_VOID(communicator.allReduce(plan.rowsByRank.data(), communicator.size(), DType::I64,
                                       ReduceOp::Sum));
  for (int64_t r : plan.rowsByRank)
    plan.globalRows += r;
  return plan;
}

Expected<void> verifyTrainingProgram(Communicator &communicator, const ShardPlan &shards,
                                     const TrainingProgram &program,
                                     const TrainingOptions &options) {
  return runtime::dist::verifySameProgram(
      communicator, trainingProgramHash(program, options, shards.rowsByRank));
}

Expected<void> broadcastFromRankZero(Communicator &communicator, NamedTensors &tensors) {
  for (auto &[name, tensor] : tensors) {
    Expected<void> sent = communicator.broadcast(tensor.bytes().data(), tensor.numElements(),
                                                 tensor.dtype(), /*root=*/0);
    if (!sent)
      return makeError(sent.error().code(),
                       fmt::format("broadcasting parameter '{}' from rank 0: {}", name,
                                   sent.error().message()));
  }
  return {};
}

Expected<void> agreeOnOutcome(Communicator &communicator, const Expected<void> &local,
                              std::string_view what) {
  std::vector<int64_t> failed(static_cast<size_t>(communicator.size()), 0);
  failed[static_cast<size_t>(communicator.rank())] = local ? 0 : 1;
  KILN_TRY_VOID(
      communicator.allReduce(failed.data(), communicator.size(), DType::I64, ReduceOp::Sum));
  if (!local)
    return local;
  std::vector<int> ranks;
  for (int rank = 0; rank < communicator.size(); ++rank)
    if (failed[static_cast<size_t>(rank)] != 0)
      ranks.push_back(rank);
  if (ranks.empty())
    return {};
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("{} failed on rank{} {} (its error says why), so it fails on {} "
                               "too",
                               what, ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "),
                               runtime::dist::describeRank(communicator)));
}

Expected<double> sumAcrossRanks(Communicator &communicator, double value) {
  KILN_TRY_VOID(communicator.allReduce(&value, 1, DType::F64, ReduceOp::Sum));
  return value;
}

} // namespace kiln::training
