// The tuning database: records and sweeps stored, found, replaced, pruned and
// kept across reopening; foreign, corrupt and newer files refused untouched.
#include "runtime/tuning/TuningDatabase.h"

#include "frontend/TempDir.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <string>

using kiln::testing::readBytes;
using kiln::testing::TempDir;
using kiln::testing::writeBytes;
using namespace kiln::tuning;

namespace {

TuningRecord makeRecord(const std::string &signature, const std::string &shapes,
                        const std::string &target = "cpu test", const std::string &version = "0.1.0") {
  TuningRecord record;
  record.key = {signature, shapes, target, version};
  record.schedule = "matmul mc=48 nc=256 kc=128 mr=6 nr=16 vw=8 pack=ab par=inner";
  record.bestSeconds = 1.5e-4;
  record.defaultSeconds = 2.5e-4;
  record.candidatesTimed = 12;
  record.summary = "contraction matmul " + shapes;
  record.tunedAt = "2026-11-20T10:00:00Z";
  return record;
}

void requireSame(const TuningRecord &a, const TuningRecord &b) {
  CHECK(a.key == b.key);
  CHECK(a.schedule == b.schedule);
  CHECK(a.backend == b.backend);
  CHECK(a.bestSeconds == b.bestSeconds);
  CHECK(a.defaultSeconds == b.defaultSeconds);
  CHECK(a.candidatesTimed == b.candidatesTimed);
  CHECK(a.summary == b.summary);
  CHECK(a.tunedAt == b.tunedAt);
}

/// Runs one SQL statement on a file through SQLite directly (to make foreign files).
void rawSql(const std::string &path, const char *sql) {
  sqlite3 *db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

} // namespace

TEST_CASE("records are put, found, replaced, listed and persist across reopening",
          "[tuning][database]") {
  TempDir dir;
  std::string path = dir.file("sub/dir/tuning.sqlite");
  {
    auto db = TuningDatabase::open(path);
    REQUIRE(db);
    CHECK(db->path() == path);
    REQUIRE(db->put(makeRecord("matmul f32", "[64,80]x[80,50]")));
    REQUIRE(db->put(makeRecord("matmul f32", "[8,8]x[8,8]")));
    TuningRecord other = makeRecord("add f32", "[10]");
    other.backend = "cudnn";
    other.tunedAt.clear(); // stamped by put
    REQUIRE(db->put(other));

    auto found = db->find(makeRecord("matmul f32", "[64,80]x[80,50]").key);
    REQUIRE(found);
    REQUIRE(found->has_value());
    requireSame(**found, makeRecord("matmul f32", "[64,80]x[80,50]"));
    // Any part of the key differing is another record.
    auto missing = db->find(makeRecord("matmul f32", "[64,80]x[80,50]", "cpu other").key);
    REQUIRE(missing);
    CHECK(!missing->has_value());

    TuningRecord replacement = makeRecord("matmul f32", "[8,8]x[8,8]");
    replacement.schedule = "matmul mc=6 nc=16 kc=8 mr=6 nr=16 vw=8 pack=ab par=serial";
    REQUIRE(db->put(replacement));
    auto merged = db->merge({makeRecord("matmul f32", "[8,8]x[8,8]"), makeRecord("x", "[1]")});
    REQUIRE(merged);
    CHECK(merged->added == 1);
    CHECK(merged->replaced == 1);
  }
  auto db = TuningDatabase::open(path, /*create=*/false);
  REQUIRE(db);
  auto records = db->list();
  REQUIRE(records);
  REQUIRE(records->size() == 4);
  // Ordered by summary.
  CHECK((*records)[0].summary == "contraction matmul [10]");
  CHECK((*records)[0].backend == "cudnn");
  CHECK((*records)[0].tunedAt.size() == 20);
  CHECK((*records)[0].tunedAt.back() == 'Z');
  CHECK((*records)[1].key.shapes == "[1]");
  requireSame((*records)[2], makeRecord("matmul f32", "[64,80]x[80,50]"));
  requireSame((*records)[3], makeRecord("matmul f32", "[8,8]x[8,8]"));
}

TEST_CASE("a missing database is not created when create is false", "[tuning][database]") {
  TempDir dir;
  auto db = TuningDatabase::open(dir.file("none.sqlite"), /*create=*/false);
  REQUIRE(!db);
  CHECK(db.error().code() == kiln::ErrorCode::NotFound);
  CHECK(db.error().message().find(dir.file("none.sqlite")) != std::string::npos);
  CHECK(dir.entries().empty());
}

TEST_CASE("sweeps round trip with every candidate field", "[tuning][database]") {
  TempDir dir;
  auto db = TuningDatabase::open(dir.file("tuning.sqlite"));
  REQUIRE(db);
  SweepGroup first;
  first.key = {"matmul f32", "[4,4]x[4,4]", "cpu test", "0.1.0"};
  first.summary = "contraction matmul 4x4";
  first.candidates.push_back({"matmul a", "kiln", 1e-5, 9e-6, 7, true, ""});
  first.candidates.push_back({"conv b", "cudnn", 0, 0, 0, false, "mismatch: max error 3.5"});
  SweepGroup second;
  second.key = {"add f32", "[3]", "cpu test", "0.1.0"};
  second.summary = "pointwise add";
  auto id = db->addSweep("first sweep", {first, second});
  REQUIRE(id);
  auto otherId = db->addSweep("second", {second});
  REQUIRE(otherId);
  CHECK(*otherId != *id);

  auto read = db->sweep(*id);
  REQUIRE(read);
  REQUIRE(read->size() == 2);
  CHECK((*read)[0].key == first.key);
  CHECK((*read)[0].summary == first.summary);
  REQUIRE((*read)[0].candidates.size() == 2);
  const CandidateTiming &a = (*read)[0].candidates[0];
  CHECK((a.schedule == "matmul a" && a.backend == "kiln" && a.medianSeconds == 1e-5 &&
         a.minSeconds == 9e-6 && a.runs == 7 && a.valid && a.note.empty()));
  const CandidateTiming &b = (*read)[0].candidates[1];
  CHECK((b.schedule == "conv b" && b.backend == "cudnn" && !b.valid &&
         b.note == "mismatch: max error 3.5"));
  CHECK((*read)[1].candidates.empty());

  auto listed = db->sweeps();
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].label == "first sweep");
  CHECK((*listed)[0].groups == 2);
  CHECK((*listed)[1].groups == 1);

  auto unknown = db->sweep(*otherId + 100);
  REQUIRE(!unknown);
  CHECK(unknown.error().code() == kiln::ErrorCode::NotFound);

  auto cleared = db->clear();
  REQUIRE(cleared);
  CHECK(*cleared == 0);
  CHECK(db->sweeps()->empty());
}

TEST_CASE("prune removes the records matching every filter given", "[tuning][database]") {
  TempDir dir;
  auto db = TuningDatabase::open(dir.file("tuning.sqlite"));
  REQUIRE(db);
  auto fill = [&] {
    REQUIRE(db->clear());
    TuningRecord old = makeRecord("matmul f32", "[1]", "cpu a", "0.1.0");
    old.tunedAt = "2020-01-01T00:00:00Z";
    TuningRecord fresh = makeRecord("matmul f32", "[2]", "cpu a", "0.1.0");
    fresh.tunedAt = kiln::tuning::utcTimestamp();
    TuningRecord otherVersion = makeRecord("add f32", "[3]", "cpu a", "0.0.9");
    otherVersion.tunedAt = fresh.tunedAt;
    otherVersion.summary = "pointwise add";
    TuningRecord otherTarget = makeRecord("softmax f32", "[4]", "gpu sm_90a", "0.1.0");
    otherTarget.tunedAt = fresh.tunedAt;
    otherTarget.summary = "rownorm softmax";
    REQUIRE(db->merge({old, fresh, otherVersion, otherTarget}));
  };
  auto remaining = [&] {
    std::string shapes;
    auto records = db->list();
    REQUIRE(records);
    for (const TuningRecord &record : *records)
      shapes += record.key.shapes;
    return shapes;
  };
  using Filter = TuningDatabase::PruneFilter;

  fill();
  CHECK(*db->prune(Filter{.otherVersionsThan = "0.1.0"}) == 1);
  CHECK(remaining().find("[3]") == std::string::npos);

  fill();
  CHECK(*db->prune(Filter{.otherTargetsThan = std::vector<std::string>{"cpu a"}}) == 1);
  CHECK(remaining().find("[4]") == std::string::npos);
  fill(); // every target kept
  CHECK(*db->prune(Filter{.otherTargetsThan = std::vector<std::string>{"gpu sm_90a", "cpu a"}}) ==
        0);

  fill();
  CHECK(*db->prune(Filter{.olderThanDays = 30}) == 1);
  CHECK(remaining().find("[1]") == std::string::npos);

  fill();
  CHECK(*db->prune(Filter{.matching = "softmax"}) == 1); // the summary
  CHECK(*db->prune(Filter{.matching = "matmul"}) == 2);  // the signature
  CHECK(remaining() == "[3]");

  fill(); // filters combine: matmul AND older than a day
  CHECK(*db->prune(Filter{.olderThanDays = 1, .matching = "matmul"}) == 1);
  CHECK(db->list()->size() == 3);

  auto none = db->prune(Filter{});
  REQUIRE(!none);
  CHECK(none.error().code() == kiln::ErrorCode::InvalidArgument);
  CHECK(*db->clear() == 3);
  CHECK(db->list()->empty());
}

TEST_CASE("foreign, corrupt and newer files are refused and left untouched",
          "[tuning][database]") {
  TempDir dir;
  auto refuses = [&](const std::string &path, const std::string &expected) {
    std::vector<uint8_t> before = readBytes(path);
    for (bool create : {true, false}) {
      auto db = TuningDatabase::open(path, create);
      REQUIRE(!db);
      INFO(db.error().message());
      CHECK(db.error().message().find(path) != std::string::npos);
      CHECK(db.error().message().find(expected) != std::string::npos);
    }
    CHECK(readBytes(path) == before);
  };

  std::string text = dir.file("text.sqlite");
  writeBytes(text, {'n', 'o', 't', ' ', 'a', ' ', 'd', 'b', '\n'});
  refuses(text, "not a SQLite file");

  // A SQLite header followed by garbage: corrupt.
  std::string corrupt = dir.file("corrupt.sqlite");
  std::vector<uint8_t> bytes(4096, 0xab);
  const char header[] = "SQLite format 3";
  std::copy(header, header + 16, bytes.begin());
  writeBytes(corrupt, bytes);
  refuses(corrupt, "tuning database");

  std::string foreign = dir.file("foreign.sqlite");
  rawSql(foreign, "CREATE TABLE photos (id INTEGER)");
  refuses(foreign, "not a kiln tuning database");

  std::string otherApp = dir.file("other-app.sqlite");
  rawSql(otherApp, "PRAGMA application_id = 1234; CREATE TABLE t (x)");
  refuses(otherApp, "application id");

  // Not regular files: refused by name, without blocking on the FIFO.
  std::string fifo = dir.file("fifo.sqlite");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (auto [path, expected] : {std::pair{dir.path().string(), "it is a directory"},
                                std::pair{fifo, "it is a FIFO"},
                                std::pair{std::string("/dev/zero"), "it is a character device"}})
    for (bool create : {true, false}) {
      auto db = TuningDatabase::open(path, create);
      REQUIRE(!db);
      CHECK(db.error().message() ==
            fmt::format("cannot read tuning database '{}': {}, not a regular file", path,
                        expected));
    }

  std::string newer = dir.file("newer.sqlite");
  REQUIRE(TuningDatabase::open(newer));
  rawSql(newer, "PRAGMA user_version = 99");
  refuses(newer, "newer");
}
