// The Trainer's host-side agreement in data-parallel training: every rank's
// shard of the global batch, the same program on every rank, rank 0's
// parameters everywhere, and one outcome for what a rank did on its own
// (docs/distributed.md, "Data-parallel training").
#pragma once

#include "compiler/training/TrainingProgram.h"
#include "runtime/dist/Communicator.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln::training {

/// Every rank's share of the global batch.
struct ShardPlan {
  std::vector<int64_t> rowsByRank;
  int64_t rows = 0;       ///< this rank's
  int64_t globalRows = 0; ///< every rank's together
  /// This rank's gradients' weight in the global batch's: rows / globalRows.
  double weight() const { return static_cast<double>(rows) / static_cast<double>(globalRows); }
};

/// The rows of a batch for a model with these inputs: the first dimension,
/// which every input must share (a batch-major model).
Expected<int64_t> batchRows(const std::vector<std::pair<std::string, ir::TensorType>> &inputs);

/// Gathers every rank's rows with one all-reduce (rank r fills slot r).
Expected<ShardPlan> agreeOnShards(runtime::dist::Communicator &communicator, int64_t rows);

/// runtime::dist::verifySameProgram on the training program's hash: the
/// printed program when every shard has the same rows, and its batch-free
/// signature when they differ (ProgramSignature.h).
Expected<void> verifyTrainingProgram(runtime::dist::Communicator &communicator,
                                     const ShardPlan &shards, const TrainingProgram &program,
                                     const TrainingOptions &options);

/// Rank 0's tensors into every rank's, one broadcast per tensor in name order.
/// Every rank must hold the same names and types (verifyTrainingProgram).
Expected<void> broadcastFromRankZero(runtime::dist::Communicator &communicator,
                                     NamedTensors &tensors);

/// Makes what each rank did on its own (`local`) one outcome: a rank that
/// failed returns its own error, and every other rank an error naming the
/// ranks that failed at `what`. One all-reduce.
Expected<void> agreeOnOutcome(runtime::dist::Communicator &communicator,
                              const Expected<void> &local, std::string_view what);

/// The sum over the ranks of `value` (f64, one all-reduce).
Expected<double> sumAcrossRanks(runtime::dist::Communicator &communicator, double value);

} // namespace kiln::training
