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

/// The current time, UTC, ISO 8601 ("2026-11-26T14:17:16Z"): how records and
/// sweeps are stamped.
std::string utcTimestamp();

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

  /// Inserts `record`, replacing the one with the same key. An empty tunedAt
  /// is stamped with the current time.
  Expected<void> put(const TuningRecord &record);
  /// The record for `key`, or nullopt.
  Expected<std::optional<TuningRecord>> find(const TuningKey &key) const;
  /// Every record, ordered by summary then key.
  Expected<std::vector<TuningRecord>> list() const;

  /// Stores one sweep's measurements under a new sweep id (returned).
  Expected<int64_t> addSweep(const std::string &label, const std::vector<SweepGroup> &groups);
  /// A stored sweep's groups and candidates.
  Expected<std::vector<SweepGroup>> sweep(int64_t sweepId) const;

  /// Inserts or replaces every record in one transaction (all or none).
  struct MergeCounts {
    int added = 0, replaced = 0;
  };
  Expected<MergeCounts> merge(const std::vector<TuningRecord> &records);

  /// One stored sweep, as listed.
  struct SweepInfo {
    int64_t id = 0;
    std::string label;
    std::string createdAt; ///< UTC, ISO 8601
    int groups = 0;
  };
  /// Every stored sweep, oldest first.
  Expected<std::vector<SweepInfo>> sweeps() const;

  /// Which records prune removes: those matching EVERY filter that is set.
  struct PruneFilter {
    /// Records tuned by a kiln other than this version.
    std::optional<std::string> otherVersionsThan = std::nullopt;
    /// Records for a target other than these fingerprints.
    std::optional<std::vector<std::string>> otherTargetsThan = std::nullopt;
    /// Records tuned more than this many days ago (by tunedAt).
    std::optional<double> olderThanDays = std::nullopt;
    /// Records whose signature or summary contains this text.
    std::optional<std::string> matching = std::nullopt;

    bool empty() const {
      return !otherVersionsThan && !otherTargetsThan && !olderThanDays && !matching;
    }
  };
  /// Removes the matching records (not sweeps); returns how many. An empty
  /// filter is an error: removing everything is clear().
  Expected<int> prune(const PruneFilter &filter);
  /// Removes every record and sweep; returns how many records were removed.
  Expected<int> clear();

  struct Impl;

private:
  explicit TuningDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::tuning
