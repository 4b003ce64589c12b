// The tuning database on SQLite: schema checks on open, records, sweeps and
// pruning, every write in one transaction (docs/tuning.md).
#include "runtime/tuning/TuningDatabase.h"

#include "runtime/cache/CacheDirectory.h"
#include "support/RegularFile.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <unistd.h>

namespace kiln::tuning {

namespace {

namespace fs = std::filesystem;

/// 'KTDB': marks a SQLite file as a kiln tuning database (PRAGMA application_id).
constexpr int32_t kApplicationId = 0x4B544442;
/// The schema this kiln writes; a file with a newer one is refused.
constexpr int kSchemaVersion = 1;
/// How long a write waits for another process's transaction before failing.
constexpr int kBusyTimeoutMs = 10000;

constexpr const char *kSchema = R"sql(
CREATE TABLE records (
  signature TEXT NOT NULL,
  shapes TEXT NOT NULL,
  target TEXT NOT NULL,
  kiln_version TEXT NOT NULL,
  schedule TEXT NOT NULL,
  backend TEXT NOT NULL,
  best_seconds REAL NOT NULL,
  default_seconds REAL NOT NULL,
  candidates_timed INTEGER NOT NULL,
  summary TEXT NOT NULL,
  tuned_at TEXT NOT NULL,
  UNIQUE (signature, shapes, target, kiln_version)
);
CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY,
  label TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE sweep_groups (
  id INTEGER PRIMARY KEY,
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  signature TEXT NOT NULL,
  shapes TEXT NOT NULL,
  target TEXT NOT NULL,
  kiln_version TEXT NOT NULL,
  summary TEXT NOT NULL
);
CREATE TABLE sweep_candidates (
  group_id INTEGER NOT NULL REFERENCES sweep_groups(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  schedule TEXT NOT NULL,
  backend TEXT NOT NULL,
  median_seconds REAL NOT NULL,
  min_seconds REAL NOT NULL,
  runs INTEGER NOT NULL,
  valid INTEGER NOT NULL,
  note TEXT NOT NULL
);
CREATE INDEX sweep_groups_by_sweep ON sweep_groups (sweep_id, position);
CREATE INDEX sweep_candidates_by_group ON sweep_candidates (group_id, position);
)sql";

/// A prepared statement, finalized on scope exit.
class Statement {
public:
  Statement(sqlite3 *db, const char *sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;

  bool ok() const { return stmt_ != nullptr; }
  void bind(int index, const std::string &text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, int value) { sqlite3_bind_int(stmt_, index, value); }
  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  std::string text(int column) const {
    const unsigned char *value = sqlite3_column_text(stmt_, column);
    return value ? std::string(reinterpret_cast<const char *>(value),
                               static_cast<size_t>(sqlite3_column_bytes(stmt_, column)))
                 : std::string();
  }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }

private:
  sqlite3_stmt *stmt_ = nullptr;
};

/// Whether `file` starts with SQLite's 16-byte header.
bool hasSqliteHeader(const RegularFile &file) {
  char header[16] = {};
  return file.size >= sizeof header &&
         ::pread(file.descriptor.get(), header, sizeof header, 0) ==
             static_cast<ssize_t>(sizeof header) &&
         std::memcmp(header, "SQLite format 3", 16) == 0;
}

} // namespace

std::string utcTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

struct TuningDatabase::Impl {
  std::string path;
  sqlite3 *db = nullptr;

  ~Impl() { sqlite3_close(db); }

  Error failure(std::string_view what) const {
    return Error(ErrorCode::IOError, fmt::format("tuning database {}: {}: {}", path, what,
                                                 db ? sqlite3_errmsg(db) : "cannot open"));
  }
  Expected<void> exec(const char *sql, std::string_view what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
      return std::unexpected(failure(what));
    return {};
  }
  Expected<int64_t> pragmaValue(const char *pragma) {
    Statement statement(db, pragma);
    if (!statement.ok() || statement.step() != SQLITE_ROW)
      return std::unexpected(failure(fmt::format("cannot read {}", pragma)));
    return statement.integer(0);
  }
  /// Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back on error.
  template <typename Body> auto transaction(std::string_view what, Body body) -> decltype(body()) {
    KILN_TRY_VOID(exec("BEGIN IMMEDIATE", what));
    auto result = body();
    if (!result) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return result;
    }
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error error = failure(what);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return std::unexpected(std::move(error));
    }
    return result;
  }
  /// Checks the file is a kiln tuning database this kiln can read, creating the
  /// schema in a new, empty one.
  Expected<void> checkSchema(bool mayInitialize);
  Expected<bool> putOne(const TuningRecord &record);
};

Expected<void> TuningDatabase::Impl::checkSchema(bool mayInitialize) {
  KILN_TRY(int64_t applicationId, pragmaValue("PRAGMA application_id"));
  KILN_TRY(int64_t version, pragmaValue("PRAGMA user_version"));
  if (applicationId == 0 && version == 0) {
    Statement tables(db, "SELECT count(*) FROM sqlite_master");
    if (!tables.ok() || tables.step() != SQLITE_ROW)
      return std::unexpected(failure("cannot read the schema"));
    if (tables.integer(0) != 0)
      return makeError(ErrorCode::FormatError,
                       fmt::format("{} is a SQLite database but not a kiln tuning database "
                                   "(it has tables and no kiln application id)",
                                   path));
    if (!mayInitialize)
      return makeError(ErrorCode::FormatError,
                       fmt::format("{} is an empty SQLite file, not a kiln tuning database", path));
    // Two processes may create the file at once: the second finds the schema made.
    return transaction("cannot create the schema", [&]() -> Expected<void> {
      KILN_TRY(int64_t again, pragmaValue("PRAGMA user_version"));
      if (again != 0)
        return {};
      KILN_TRY_VOID(exec(kSchema, "cannot create the schema"));
      std::string pragmas = fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}",
                                        kApplicationId, kSchemaVersion);
      return exec(pragmas.c_str(), "cannot set the schema version");
    });
  }
  if (applicationId != kApplicationId)
    return makeError(ErrorCode::FormatError,
                     fmt::format("{} is a SQLite database but not a kiln tuning database "
                                 "(application id {:#x}, expected {:#x})",
                                 path, applicationId, kApplicationId));
  if (version > kSchemaVersion)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("{} has tuning database schema version {}, newer than the {} "
                                 "this kiln reads: use a newer kiln or another database",
                                 path, version, kSchemaVersion));
  if (version < 1)
    return makeError(ErrorCode::FormatError,
                     fmt::format("{} is marked as a kiln tuning database but has no schema "
                                 "version",
                                 path));
  return {};
}

Expected<TuningDatabase> TuningDatabase::open(const std::string &path, bool create) {
  if (path.empty())
    return makeError(ErrorCode::InvalidArgument, "tuning database: no path given");
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (!exists && !create)
    return makeError(ErrorCode::NotFound, fmt::format("tuning database {} does not exist", path));
  if (exists) {
    // Look at the file ourselves: SQLite would report a foreign file only on
    // first use, and would wait on a FIFO.
    KILN_TRY(RegularFile file, openRegularFile(path, "tuning database"));
    bool emptyFile = file.size == 0;
    if (!hasSqliteHeader(file) && !emptyFile)
      return makeError(ErrorCode::FormatError,
                       fmt::format("{} is not a kiln tuning database (not a SQLite file)", path));
    if (emptyFile && !create)
      return makeError(ErrorCode::FormatError,
                       fmt::format("tuning database {} is an empty file", path));
  } else {
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec) && !fs::create_directories(parent, ec) && ec)
      return makeError(ErrorCode::IOError,
                       fmt::format("cannot create the directory {} of tuning database {}: {}",
                                   parent.string(), path, ec.message()));
  }

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK)
    return std::unexpected(impl->failure("cannot open"));
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);
  KILN_TRY_VOID(impl->exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys"));
  KILN_TRY_VOID(impl->checkSchema(create));
  return TuningDatabase(std::move(impl));
}

std::string TuningDatabase::defaultPath() {
  if (const char *explicitPath = std::getenv("KILN_TUNING_DB"); explicitPath && *explicitPath)
    return explicitPath;
  runtime::CacheLocation location = runtime::cacheLocationFromEnvironment();
  return location.root ? (*location.root / "tuning.sqlite").string() : std::string();
}

TuningDatabase::TuningDatabase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningDatabase::TuningDatabase(TuningDatabase &&) noexcept = default;
TuningDatabase &TuningDatabase::operator=(TuningDatabase &&) noexcept = default;
TuningDatabase::~TuningDatabase() = default;

const std::string &TuningDatabase::path() const { return impl_->path; }

Expected<bool> TuningDatabase::Impl::putOne(const TuningRecord &record) {
  Statement existing(db, "SELECT 1 FROM records WHERE signature = ?1 AND shapes = ?2 AND "
                         "target = ?3 AND kiln_version = ?4");
  Statement insert(db, "INSERT OR REPLACE INTO records (signature, shapes, target, kiln_version, "
                       "schedule, backend, best_seconds, default_seconds, candidates_timed, "
                       "summary, tuned_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  if (!existing.ok() || !insert.ok())
    return std::unexpected(failure("cannot prepare a record write"));
  const TuningKey &key = record.key;
  for (Statement *statement : {&existing, &insert}) {
    statement->bind(1, key.signature);
    statement->bind(2, key.shapes);
    statement->bind(3, key.target);
    statement->bind(4, key.kilnVersion);
  }
  int found = existing.step();
  if (found != SQLITE_ROW && found != SQLITE_DONE)
    return std::unexpected(failure("cannot look up a record"));
  insert.bind(5, record.schedule);
  insert.bind(6, record.backend);
  insert.bind(7, record.bestSeconds);
  insert.bind(8, record.defaultSeconds);
  insert.bind(9, record.candidatesTimed);
  insert.bind(10, record.summary);
  insert.bind(11, record.tunedAt.empty() ? utcTimestamp() : record.tunedAt);
  if (insert.step() != SQLITE_DONE)
    return std::unexpected(failure("cannot write a record"));
  return found == SQLITE_ROW;
}

Expected<void> TuningDatabase::put(const TuningRecord &record) {
  return impl_->transaction("cannot write a record", [&]() -> Expected<void> {
    KILN_TRY_VOID(impl_->putOne(record));
    return {};
  });
}

Expected<TuningDatabase::MergeCounts>
TuningDatabase::merge(const std::vector<TuningRecord> &records) {
  return impl_->transaction("cannot merge records", [&]() -> Expected<MergeCounts> {
    MergeCounts counts;
    for (const TuningRecord &record : records) {
      KILN_TRY(bool replaced, impl_->putOne(record));
      ++(replaced ? counts.replaced : counts.added);
    }
    return counts;
  });
}

namespace {

constexpr const char *kRecordColumns =
    "signature, shapes, target, kiln_version, schedule, backend, best_seconds, "
    "default_seconds, candidates_timed, summary, tuned_at";

TuningRecord recordFromRow(const Statement &row) {
  TuningRecord record;
  record.key = {row.text(0), row.text(1), row.text(2), row.text(3)};
  record.schedule = row.text(4);
  record.backend = row.text(5);
  record.bestSeconds = row.real(6);
  record.defaultSeconds = row.real(7);
  record.candidatesTimed = static_cast<int>(row.integer(8));
  record.summary = row.text(9);
  record.tunedAt = row.text(10);
  return record;
}

} // namespace

Expected<std::optional<TuningRecord>> TuningDatabase::find(const TuningKey &key) const {
  std::string sql = fmt::format("SELECT {} FROM records WHERE signature = ?1 AND shapes = ?2 AND "
                                "target = ?3 AND kiln_version = ?4",
                                kRecordColumns);
  Statement query(impl_->db, sql.c_str());
  if (!query.ok())
    return std::unexpected(impl_->failure("cannot prepare a record lookup"));
  query.bind(1, key.signature);
  query.bind(2, key.shapes);
  query.bind(3, key.target);
  query.bind(4, key.kilnVersion);
  int status = query.step();
  if (status == SQLITE_DONE)
    return std::optional<TuningRecord>();
  if (status != SQLITE_ROW)
    return std::unexpected(impl_->failure("cannot look up a record"));
  return std::optional<TuningRecord>(recordFromRow(query));
}

Expected<std::vector<TuningRecord>> TuningDatabase::list() const {
  std::string sql = fmt::format("SELECT {} FROM records ORDER BY summary, signature, shapes, "
                                "target, kiln_version",
                                kRecordColumns);
  Statement query(impl_->db, sql.c_str());
  if (!query.ok())
    return std::unexpected(impl_->failure("cannot prepare the record list"));
  std::vector<TuningRecord> records;
  int status;
  while ((status = query.step()) == SQLITE_ROW)
    records.push_back(recordFromRow(query));
  if (status != SQLITE_DONE)
    return std::unexpected(impl_->failure("cannot list the records"));
  return records;
}

Expected<int64_t> TuningDatabase::addSweep(const std::string &label,
                                           const std::vector<SweepGroup> &groups) {
  return impl_->transaction("cannot write a sweep", [&]() -> Expected<int64_t> {
    sqlite3 *db = impl_->db;
    Statement sweep(db, "INSERT INTO sweeps (label, created_at) VALUES (?1, ?2)");
    if (!sweep.ok())
      return std::unexpected(impl_->failure("cannot prepare a sweep write"));
    sweep.bind(1, label);
    sweep.bind(2, utcTimestamp());
    if (sweep.step() != SQLITE_DONE)
      return std::unexpected(impl_->failure("cannot write a sweep"));
    int64_t sweepId = sqlite3_last_insert_rowid(db);
    for (size_t g = 0; g < groups.size(); ++g) {
      const SweepGroup &in = groups[g];
      Statement groupRow(db, "INSERT INTO sweep_groups (sweep_id, position, signature, shapes, "
                             "target, kiln_version, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      groupRow.bind(1, sweepId);
      groupRow.bind(2, static_cast<int64_t>(g));
      groupRow.bind(3, in.key.signature);
      groupRow.bind(4, in.key.shapes);
      groupRow.bind(5, in.key.target);
      groupRow.bind(6, in.key.kilnVersion);
      groupRow.bind(7, in.summary);
      if (groupRow.step() != SQLITE_DONE)
        return std::unexpected(impl_->failure("cannot write a sweep group"));
      int64_t groupId = sqlite3_last_insert_rowid(db);
      for (size_t c = 0; c < in.candidates.size(); ++c) {
        const CandidateTiming &candidate = in.candidates[c];
        Statement row(db, "INSERT INTO sweep_candidates (group_id, position, schedule, backend, "
                          "median_seconds, min_seconds, runs, valid, note) VALUES "
                          "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
        row.bind(1, groupId);
        row.bind(2, static_cast<int64_t>(c));
        row.bind(3, candidate.schedule);
        row.bind(4, candidate.backend);
        row.bind(5, candidate.medianSeconds);
        row.bind(6, candidate.minSeconds);
        row.bind(7, candidate.runs);
        row.bind(8, candidate.valid ? 1 : 0);
        row.bind(9, candidate.note);
        if (row.step() != SQLITE_DONE)
          return std::unexpected(impl_->failure("cannot write a sweep candidate"));
      }
    }
    return sweepId;
  });
}

Expected<std::vector<SweepGroup>> TuningDatabase::sweep(int64_t sweepId) const {
  sqlite3 *db = impl_->db;
  Statement exists(db, "SELECT 1 FROM sweeps WHERE id = ?1");
  Statement groups(db, "SELECT id, signature, shapes, target, kiln_version, summary FROM "
                       "sweep_groups WHERE sweep_id = ?1 ORDER BY position");
  if (!exists.ok() || !groups.ok())
    return std::unexpected(impl_->failure("cannot prepare a sweep read"));
  exists.bind(1, sweepId);
  int status = exists.step();
  if (status == SQLITE_DONE)
    return makeError(ErrorCode::NotFound,
                     fmt::format("tuning database {} has no sweep {}", impl_->path, sweepId));
  if (status != SQLITE_ROW)
    return std::unexpected(impl_->failure("cannot read a sweep"));
  std::vector<SweepGroup> result;
  groups.bind(1, sweepId);
  while ((status = groups.step()) == SQLITE_ROW) {
    SweepGroup group;
    group.key = {groups.text(1), groups.text(2), groups.text(3), groups.text(4)};
    group.summary = groups.text(5);
    Statement rows(db, "SELECT schedule, backend, median_seconds, min_seconds, runs, valid, "
                       "note FROM sweep_candidates WHERE group_id = ?1 ORDER BY position");
    rows.bind(1, groups.integer(0));
    int rowStatus;
    while ((rowStatus = rows.step()) == SQLITE_ROW) {
      CandidateTiming candidate;
      candidate.schedule = rows.text(0);
      candidate.backend = rows.text(1);
      candidate.medianSeconds = rows.real(2);
      candidate.minSeconds = rows.real(3);
      candidate.runs = static_cast<int>(rows.integer(4));
      candidate.valid = rows.integer(5) != 0;
      candidate.note = rows.text(6);
      group.candidates.push_back(std::move(candidate));
    }
    if (rowStatus != SQLITE_DONE)
      return std::unexpected(impl_->failure("cannot read sweep candidates"));
    result.push_back(std::move(group));
  }
  if (status != SQLITE_DONE)
    return std::unexpected(impl_->failure("cannot read sweep groups"));
  return result;
}

Expected<std::vector<TuningDatabase::SweepInfo>> TuningDatabase::sweeps() const {
  Statement query(impl_->db, "SELECT s.id, s.label, s.created_at, (SELECT count(*) FROM "
                             "sweep_groups g WHERE g.sweep_id = s.id) FROM sweeps s ORDER BY s.id");
  if (!query.ok())
    return std::unexpected(impl_->failure("cannot prepare the sweep list"));
  std::vector<SweepInfo> result;
  int status;
  while ((status = query.step()) == SQLITE_ROW)
    result.push_back({query.integer(0), query.text(1), query.text(2),
                      static_cast<int>(query.integer(3))});
  if (status != SQLITE_DONE)
    return std::unexpected(impl_->failure("cannot list the sweeps"));
  return result;
}

Expected<int> TuningDatabase::prune(const PruneFilter &filter) {
  if (filter.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "tuning database prune: no filter given (clear() removes every record)");
  std::string sql = "DELETE FROM records WHERE 1";
  if (filter.otherVersionsThan)
    sql += " AND kiln_version <> ?1";
  if (filter.otherTargetsThan) {
    sql += " AND target NOT IN (''";
    for (size_t i = 0; i < filter.otherTargetsThan->size(); ++i)
      sql += fmt::format(", ?{}", 10 + i);
    sql += ")";
  }
  // tuned_at is ISO 8601 UTC, which sorts as text; a record with no time is never "old".
  if (filter.olderThanDays)
    sql += " AND tuned_at <> '' AND tuned_at < strftime('%Y-%m-%dT%H:%M:%SZ', 'now', ?3)";
  if (filter.matching)
    sql += " AND (instr(signature, ?4) > 0 OR instr(summary, ?4) > 0)";
  return impl_->transaction("cannot prune records", [&]() -> Expected<int> {
    Statement statement(impl_->db, sql.c_str());
    if (!statement.ok())
      return std::unexpected(impl_->failure("cannot prepare the prune"));
    if (filter.otherVersionsThan)
      statement.bind(1, *filter.otherVersionsThan);
    if (filter.otherTargetsThan)
      for (size_t i = 0; i < filter.otherTargetsThan->size(); ++i)
        statement.bind(static_cast<int>(10 + i), (*filter.otherTargetsThan)[i]);
    if (filter.olderThanDays) {
      // Clamped (NaN and negatives to 0, at most a million days) so the conversion is defined.
      double days = *filter.olderThanDays >= 0 ? std::min(*filter.olderThanDays, 1e6) : 0.0;
      statement.bind(3, fmt::format("-{} seconds", static_cast<int64_t>(days * 86400.0)));
    }
    if (filter.matching)
      statement.bind(4, *filter.matching);
    if (statement.step() != SQLITE_DONE)
      return std::unexpected(impl_->failure("cannot prune records"));
    return sqlite3_changes(impl_->db);
  });
}

Expected<int> TuningDatabase::clear() {
  return impl_->transaction("cannot clear", [&]() -> Expected<int> {
    Statement count(impl_->db, "SELECT count(*) FROM records");
    if (!count.ok() || count.step() != SQLITE_ROW)
      return std::unexpected(impl_->failure("cannot count the records"));
    int removed = static_cast<int>(count.integer(0));
    KILN_TRY_VOID(impl_->exec("DELETE FROM records; DELETE FROM sweep_candidates; "
                              "DELETE FROM sweep_groups; DELETE FROM sweeps",
                              "cannot clear"));
    return removed;
  });
}

} // namespace kiln::tuning
