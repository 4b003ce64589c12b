// Reading and writing named weight tensors in the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then
// the packed little-endian data.
#pragma once

#include "support/DType.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::io {

/// Tensors by name, in sorted name order (heterogeneous lookup by string_view).
using TensorMap = std::map<std::string, HostTensor, std::less<>>;
/// The string pairs of a file's "__metadata__" entry.
using SafetensorsMetadata = std::map<std::string, std::string, std::less<>>;

/// A whole file: its tensors and its "__metadata__" (empty when it has none).
struct SafetensorsContents {
  TensorMap tensors;
  SafetensorsMetadata metadata;
};

/// The safetensors name of a dtype: "F32", "BF16", "F8_E4M3", "BOOL", ...
std::string_view safetensorsDTypeName(DType type);
/// The kiln dtype of a safetensors dtype name; nullopt for names kiln lacks
/// (U8, I16, F8_E8M0, ...) and for unknown ones.
std::optional<DType> parseSafetensorsDType(std::string_view name);

/// Writes `tensors` to `path` in sorted name order, after `metadata` (as
/// "__metadata__", omitted when empty), with the header padded to a multiple
/// of 8 bytes: the same tensors and metadata always give the same bytes. The file
/// is written under a temporary name in the same directory and renamed into
/// place, so a failed save leaves neither a partial file nor the temporary.
/// Fails with InvalidArgument for an empty name or the reserved "__metadata__",
/// and with IOError when the file cannot be written.
Expected<void> saveSafetensors(const std::string &path, const TensorMap &tensors,
                               const SafetensorsMetadata &metadata = {});

/// Reads every tensor of a safetensors file. The header is checked strictly:
/// bad JSON, unknown dtypes or fields, duplicate or empty names, and byte ranges that are
/// out of range, overlapping, leave holes, or do not match shape * dtype size
/// are FormatErrors naming the file and the offending tensor or byte. "__metadata__"
/// must map strings to strings (each key once); loadSafetensors ignores it.
Expected<TensorMap> loadSafetensors(const std::string &path);
/// loadSafetensors with the "__metadata__" pairs.
Expected<SafetensorsContents> readSafetensors(const std::string &path);
/// The same checks on a file's bytes held in memory; errors name `name` as
/// they would the path (the fuzzers and in-memory checkpoints).
Expected<SafetensorsContents> parseSafetensors(std::string_view bytes, const std::string &name);

} // namespace kiln::io
