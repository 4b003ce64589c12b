// What every rank of a data-parallel run must agree on before training: the
// training program and the options that drive it, as one hash
// (runtime/dist/ProgramHash.h compares it across the ranks).
#pragma once

#include "compiler/training/TrainingProgram.h"

#include <cstdint>
#include <span>
#include <string>

namespace kiln::training {

/// The canonical text of `program` and of the options that change its result
/// (the optimizer's hyper-parameters, clipping, accumulation, loss scaling,
/// precision, the bucket caps). `shardRows` holds every rank's rows (one entry
/// per rank, this rank's among them). When they are all equal (or there is
/// one), the text is the printed program. When they differ, it is the
/// batch-free signature: every node keeps its op, operands, dtype, rank and
/// non-integer attributes, but integer lists (shapes, slice bounds) keep only
/// their length, because uneven shards change them; parameters, the inputs'
/// dimensions after the first and the all_reduce results (the buckets, which
/// must match exactly) keep their full types. Constants keep their values,
/// except a value of magnitude 1/(rows * m) for one of the shards' rows and a
/// whole m (a mean's scale over a batch reduction: the loss's 1/rows, a
/// reduce_mean gradient's 1/(rows * H * W)), which is written as that scale
/// of the batch, so the shards agree on it.
std::string trainingProgramSignature(const TrainingProgram &program,
                                     const TrainingOptions &options,
                                     std::span<const int64_t> shardRows);

/// A 64-bit hash of trainingProgramSignature.
uint64_t trainingProgramHash(const TrainingProgram &program, const TrainingOptions &options,
                             std::span<const int64_t> shardRows);

} // namespace kiln::training
