// Where a compile's tuning records come from: the database CompileOptions
// name, opened once per compile according to its TuningMode (docs/tuning.md).
#pragma once

#include "compiler/Compile.h"
#include "compiler/tuning/LazyFingerprint.h"
#include "compiler/tuning/TuningKeys.h"
#include "runtime/tuning/TuningDatabase.h"

#include <optional>
#include <string>

namespace kiln::compiler {

class RecordSource {
public:
  /// Off: no records. Use: the database when its file exists (never created;
  /// a missing file or no path means no records). Replay: the database must
  /// exist. A file that is not a tuning database is an error in both.
  static Expected<RecordSource> open(const CompileOptions &options,
                                     LazyFingerprint targetFingerprint);

  TuningMode mode() const { return mode_; }
  /// Whether records can be found (a database is open).
  bool active() const { return database_.has_value(); }
  const std::string &path() const { return path_; }
  const std::string &targetFingerprint() const { return fingerprint_.get(); }
  /// Why there are no records, when !active(): "off", "no database (...)".
  const std::string &inactiveReason() const { return inactiveReason_; }

  tuning::TuningKey keyFor(const tuning::GroupIdentity &group) const;
  /// The record for `group` on this target and kiln, if any.
  Expected<std::optional<tuning::TuningRecord>> find(const tuning::GroupIdentity &group) const;

private:
  TuningMode mode_ = TuningMode::Off;
  std::string path_, inactiveReason_;
  LazyFingerprint fingerprint_{std::string()};
  std::optional<tuning::TuningDatabase> database_;
};

} // namespace kiln::compiler
