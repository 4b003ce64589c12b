// The tuning database: tuning records and sweep measurements in one SQLite
// file (docs/tuning.md). Every write is a transaction, so a crash never leaves
// half a record; a file that is not a kiln tuning database, or one of a newer
// schema, is refused with an error naming the file.
#pragma once

#include "runtime/tuning/TuningRecord.h"
#include "support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tuning {

class TuningDatabase {
public:
  /// Opens (creating when `create` and the file is missing, with its
  /// directory) the database at `path`.
  static Expected<TuningDatabase> open(const std::string &path, bool create = true);
  /// $KILN_TUNING_DB, else tuning.sqlite in the kernel cache's root
  /// (docs/caching.md). Empty when no root can be found.
  static std::string defaultPath();

  TuningDatabase(TuningDatabase &&) noexcept;
  TuningDatabase &operator=(TuningDatabase &&) noexcept;
  ~TuningDatabase();

  const std::string &path() const;

  /// Inserts `record`, replacing the one with the same key.
  Expected<void> put(const TuningRecord &record);
  /// The record for `key`, or nullopt.
  Expected<std::optional<TuningRecord>> find(const TuningKey &key) const;
  /// Every record, ordered by summary then key.
  Expected<std::vector<TuningRecord>> list() const;

  /// Stores one sweep's measurements under a new sweep id (returned).
  Expected<int64_t> addSweep(const std::string &label, const std::vector<SweepGroup> &groups);
  /// A stored sweep's groups and candidates.
  Expected<std::vector<SweepGroup>> sweep(int64_t sweepId) const;

  struct Impl;

private:
  explicit TuningDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::tuning
