// What every rank of a data-parallel run must agree on before training: the
// training program and the options that drive it, as one hash
// (runtime/dist/ProgramHash.h compares it across the ranks).
#pragma once

#include "compiler/training/TrainingProgram.h"

#include <cstdint>
#include <string>

namespace kiln::training {

/// Whether the signature keeps the batch dimension.
enum class BatchDimension {
  Exact,   ///< the printed program: ranks with equal shards compile equal text
  Ignored, ///< the program's structure without the numbers a shard's row count decides
};

/// The canonical text of `program` and of the options that change its result
/// (the optimizer's hyper-parameters, clipping, accumulation, loss scaling,
/// precision, the bucket caps). With BatchDimension::Ignored every node keeps
/// its op, operands, dtype, rank and non-numeric attributes, but integer lists
/// (shapes, slice bounds) keep only their length and constants only their
/// dtype, rank and count kind, because uneven shards change them; parameters,
/// the inputs' dimensions after the first and the all_reduce results (the
/// buckets, which must match exactly) keep their full types.
std::string trainingProgramSignature(const TrainingProgram &program,
                                     const TrainingOptions &options, BatchDimension batch);

/// A 64-bit hash of trainingProgramSignature.
uint64_t trainingProgramHash(const TrainingProgram &program, const TrainingOptions &options,
                             BatchDimension batch);

} // namespace kiln::training
