// Tuning records and sweeps as JSON and back: what `kiln tune-db export` and
// `import` exchange and what AOT bundles carry (docs/tuning.md has the format).
// Reading is strict: an unknown, missing or mistyped field is an error naming
// the field and its line.
#pragma once

#include "runtime/tuning/TuningRecord.h"
#include "support/Error.h"
#include "support/Json.h"

#include <string>
#include <string_view>
#include <vector>

namespace kiln::tuning {

/// The "format" member of an exported file, and the version this kiln writes.
inline constexpr std::string_view kTuningJsonFormat = "kiln-tuning";
inline constexpr int kTuningJsonVersion = 1;

/// One sweep as exported: its label and its groups.
struct LabeledSweep {
  std::string label;
  std::string createdAt;
  std::vector<SweepGroup> groups;
};

/// A whole export: records and sweeps.
struct TuningExport {
  std::vector<TuningRecord> records;
  std::vector<LabeledSweep> sweeps;
};

/// The document, pretty-printed (one member per line), ending in a newline.
std::string tuningExportToJson(const TuningExport &data);
/// The largest export kiln imports (1 GiB: millions of records).
inline constexpr uint64_t kMaxTuningExportBytes = uint64_t{1} << 30;

/// Parses a document tuningExportToJson wrote; `source` names it in errors.
Expected<TuningExport> tuningExportFromJson(std::string_view text, std::string_view source);

/// One record as a single-line JSON object.
std::string recordToJson(const TuningRecord &record);
/// One record from a parsed object (`source` names the file in errors).
Expected<TuningRecord> recordFromJson(const json::Value &object, std::string_view source);

} // namespace kiln::tuning
