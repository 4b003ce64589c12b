// Checkpoints as data: what a Trainer's checkpoint holds, how its safetensors
// file is sealed (a checksum in "__metadata__"), and the checks a checkpoint
// passes before a trainer trusts it (docs/training.md, "Checkpoints"). Pure
// functions over bytes and tensors, so a fuzzer drives them without a model.
#pragma once

#include "frontend/io/Safetensors.h"
#include "ir/graph/TensorType.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::training {

/// Everything a checkpoint restores.
struct CheckpointState {
  /// The trainable parameters and the optimizer state (stateName(slot, param)), by name.
  NamedTensors tensors;
  int64_t stepCount = 0; ///< updates applied (>= 0)
  double learningRate = 0; ///< of the next step (finite, > 0)
  double lossScale = 1;  ///< finite, > 0 (1 without loss scaling)
  int64_t goodSteps = 0; ///< finite steps since the scale last changed (>= 0)
  /// What the caller records about the run (kiln train: the options, the
  /// epochs completed); keys must not start with "kiln.".
  io::SafetensorsMetadata run;
};

/// The tensors a trainer expects, with their types.
using CheckpointLayout = std::map<std::string, ir::TensorType, std::less<>>;

/// "__metadata__" keys kiln owns: the format, and the checksum of the rest.
inline constexpr std::string_view kCheckpointFormatKey = "kiln.format";
inline constexpr std::string_view kCheckpointFormat = "kiln checkpoint 1";
inline constexpr std::string_view kCheckpointChecksumKey = "kiln.checksum";

/// The checksum of a checkpoint file's contents: every metadata pair but the
/// checksum itself, and every tensor's name, type and bytes (32 hex digits).
std::string checkpointChecksum(const io::SafetensorsContents &contents);

/// The ranges of the scalars and finite tensors; errors name `where` (the
/// file) and the offending entry, value and what was expected.
Expected<void> checkCheckpointValues(const CheckpointState &state, std::string_view where);
/// Exactly `layout`'s tensors, with its types: every missing, unknown and
/// mistyped entry listed in one error.
Expected<void> checkCheckpointLayout(const CheckpointState &state, const CheckpointLayout &layout,
                                     std::string_view where);

/// The file contents of `state` (scalars as "train." tensors), sealed.
io::SafetensorsContents encodeCheckpoint(const CheckpointState &state);
/// The state in `contents` after every check: the format and checksum (a file
/// without them, from a kiln before checkpoints were sealed, is refused), the
/// scalar entries and their ranges, finite tensors, and `layout` when given.
/// Errors are FormatErrors that start with "checkpoint <where>: ".
Expected<CheckpointState> decodeCheckpoint(const io::SafetensorsContents &contents,
                                           std::string_view where,
                                           const CheckpointLayout *layout = nullptr);

/// encodeCheckpoint written atomically (safetensors' temporary file and rename).
Expected<void> writeCheckpoint(const std::string &path, const CheckpointState &state);
/// The file read and decoded.
Expected<CheckpointState> readCheckpoint(const std::string &path,
                                         const CheckpointLayout *layout = nullptr);

/// The first non-finite element among float `tensors` ("'w' holds nan at
/// element 3"), or nullopt when all are finite.
std::optional<std::string> findNonFinite(const NamedTensors &tensors);

} // namespace kiln::training
