// Opening the tuning database for a compile, by mode.
#include "compiler/tuning/RecordSource.h"

#include <fmt/format.h>

#include <filesystem>

namespace kiln::compiler {

Expected<RecordSource> RecordSource::open(const CompileOptions &options,
                                          LazyFingerprint targetFingerprint) {
  RecordSource source;
  source.mode_ = options.tuning;
  source.fingerprint_ = std::move(targetFingerprint);
  if (options.tuning == TuningMode::Off) {
    source.inactiveReason_ = "off";
    return source;
  }
  source.path_ =
      options.tuningDbPath.empty() ? tuning::TuningDatabase::defaultPath() : options.tuningDbPath;
  bool replay = options.tuning == TuningMode::Replay;
  if (source.path_.empty()) {
    if (replay)
      return makeError(ErrorCode::NotFound,
                       "tuning replay needs a tuning database, and none is configured (no "
                       "$KILN_TUNING_DB and no kernel cache directory): pass --tuning-db PATH");
    source.inactiveReason_ = "no database (no path: the kernel cache directory is off)";
    return source;
  }
  std::error_code ec;
  if (!std::filesystem::exists(source.path_, ec)) {
    if (replay)
      return makeError(ErrorCode::NotFound,
                       fmt::format("tuning replay needs the tuning database {}, which does not "
                                   "exist",
                                   source.path_));
    source.inactiveReason_ = fmt::format("no database ({} does not exist)", source.path_);
    return source;
  }
  KILN_TRY(tuning::TuningDatabase database,
           tuning::TuningDatabase::open(source.path_, /*create=*/false));
  source.database_ = std::move(database);
  return source;
}

tuning::TuningKey RecordSource::keyFor(const tuning::GroupIdentity &group) const {
  return tuning::tuningKey(group, fingerprint_.get());
}

Expected<std::optional<tuning::TuningRecord>>
RecordSource::find(const tuning::GroupIdentity &group) const {
  if (!database_)
    return std::optional<tuning::TuningRecord>();
  return database_->find(keyFor(group));
}

} // namespace kiln::compiler
