// Tuning records and sweeps through JSON: exact round trips, strict reading
// with errors naming the line and the field (the JSON reader itself:
// tests/support/JsonTest.cpp).
#include "runtime/tuning/TuningRecordJson.h"

#include "StrictJson.h"

#include <catch2/catch.hpp>

using namespace kiln::tuning;

namespace {

TuningExport sampleExport() {
  TuningExport data;
  TuningRecord record;
  record.key = {"matmul(f32 %0, f32 %1) \"quoted\"\n\\", "[7,13]x[13,5]", "cpu x86 +avx2",
                "0.1.0"};
  record.schedule = "matmul mc=48 nc=256 kc=128 mr=6 nr=16 vw=8 pack=ab par=inner";
  record.backend = "kiln";
  record.bestSeconds = 1.2345678901234567e-5;
  record.defaultSeconds = 0.1 + 0.2; // not a short decimal: must still round trip exactly
  record.candidatesTimed = 31;
  record.summary = "contraction matmul 7x13 * 13x5 \u00b5s \t tab";
  record.tunedAt = "2026-11-26T14:00:00Z";
  data.records.push_back(record);
  record.key.shapes = "[1]";
  record.backend = "cudnn";
  record.bestSeconds = 3e300;
  data.records.push_back(record);

  LabeledSweep sweep;
  sweep.label = "nightly";
  sweep.createdAt = "2026-11-26T15:00:00Z";
  SweepGroup group;
  group.key = record.key;
  group.summary = "group one";
  group.candidates.push_back({"a", "kiln", 1e-6, 5e-7, 9, true, ""});
  group.candidates.push_back({"b", "cudnn", 0, 0, 0, false, "did not match: 0.5 > 1e-4"});
  sweep.groups.push_back(group);
  group.candidates.clear();
  sweep.groups.push_back(group);
  data.sweeps.push_back(sweep);
  data.sweeps.push_back({"empty", "", {}});
  return data;
}

void checkSame(const TuningExport &a, const TuningExport &b) {
  REQUIRE(a.records.size() == b.records.size());
  for (size_t i = 0; i < a.records.size(); ++i) {
    const TuningRecord &x = a.records[i], &y = b.records[i];
    CHECK(x.key == y.key);
    CHECK(x.schedule == y.schedule);
    CHECK(x.backend == y.backend);
    CHECK(x.bestSeconds == y.bestSeconds);
    CHECK(x.defaultSeconds == y.defaultSeconds);
    CHECK(x.candidatesTimed == y.candidatesTimed);
    CHECK(x.summary == y.summary);
    CHECK(x.tunedAt == y.tunedAt);
  }
  REQUIRE(a.sweeps.size() == b.sweeps.size());
  for (size_t s = 0; s < a.sweeps.size(); ++s) {
    CHECK(a.sweeps[s].label == b.sweeps[s].label);
    CHECK(a.sweeps[s].createdAt == b.sweeps[s].createdAt);
    REQUIRE(a.sweeps[s].groups.size() == b.sweeps[s].groups.size());
    for (size_t g = 0; g < a.sweeps[s].groups.size(); ++g) {
      const SweepGroup &x = a.sweeps[s].groups[g], &y = b.sweeps[s].groups[g];
      CHECK(x.key == y.key);
      CHECK(x.summary == y.summary);
      REQUIRE(x.candidates.size() == y.candidates.size());
      for (size_t c = 0; c < x.candidates.size(); ++c) {
        const CandidateTiming &p = x.candidates[c], &q = y.candidates[c];
        CHECK((p.schedule == q.schedule && p.backend == q.backend &&
               p.medianSeconds == q.medianSeconds && p.minSeconds == q.minSeconds &&
               p.runs == q.runs && p.valid == q.valid && p.note == q.note));
      }
    }
  }
}

/// The error reading `text` gives, as "where: message".
std::string errorOf(const std::string &text) {
  auto parsed = tuningExportFromJson(text, "in.json");
  REQUIRE(!parsed);
  CHECK(parsed.error().code() == kiln::ErrorCode::FormatError);
  REQUIRE(parsed.error().location());
  return parsed.error().location()->str() + ": " + parsed.error().message();
}

const char *kRecordLine =
    R"({"signature": "s", "shapes": "[1]", "target": "t", "kilnVersion": "0.1.0", )"
    R"("schedule": "none", "backend": "kiln", "bestSeconds": 1, "defaultSeconds": 2, )"
    R"("candidatesTimed": 3, "summary": "x", "tunedAt": ""})";

std::string document(const std::string &record) {
  return "{\"format\": \"kiln-tuning\", \"version\": 1,\n\"records\": [\n" + record + "\n]}";
}

} // namespace

TEST_CASE("records and sweeps round trip through JSON exactly", "[tuning][json]") {
  TuningExport data = sampleExport();
  std::string text = tuningExportToJson(data);
  // Valid JSON by an independent strict parser.
  REQUIRE(kiln::test::StrictJsonParser::parse(text));
  auto back = tuningExportFromJson(text, "export.json");
  REQUIRE(back);
  checkSame(data, *back);
  CHECK(tuningExportToJson(*back) == text);

  TuningExport empty;
  auto emptyBack = tuningExportFromJson(tuningExportToJson(empty), "e.json");
  REQUIRE(emptyBack);
  CHECK(emptyBack->records.empty());
  CHECK(emptyBack->sweeps.empty());

  // A bundle carries records without sweeps.
  auto recordsOnly = tuningExportFromJson(document(kRecordLine), "r.json");
  REQUIRE(recordsOnly);
  REQUIRE(recordsOnly->records.size() == 1);
  CHECK(recordsOnly->records[0].candidatesTimed == 3);
}

TEST_CASE("malformed tuning JSON names the line and the field", "[tuning][json]") {
  CHECK(errorOf("{\"format\": \"kiln-tuning\",\n \"version\": 1, \"records\": [}") ==
        "in.json:2:28: expected a JSON value, found '}'");
  CHECK(errorOf("[1, 2]").find("must be an object, not an array") != std::string::npos);
  CHECK(errorOf("{\"format\": \"other\", \"version\": 1, \"records\": []}")
            .find("\"format\" is \"other\"") != std::string::npos);
  CHECK(errorOf("{\"format\": \"kiln-tuning\", \"version\": 2, \"records\": []}")
            .find("version 2") != std::string::npos);

  std::string record = kRecordLine;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string changed = record;
    changed.replace(changed.find(from), from.size(), to);
    return document(changed);
  };
  CHECK(errorOf(replace("\"candidatesTimed\": 3", "\"candidatesTimed\": 3.5")) ==
        "in.json:3:173: a tuning record field \"candidatesTimed\" must be a non-negative "
        "integer");
  CHECK(errorOf(replace("\"bestSeconds\": 1", "\"bestSeconds\": \"1\"")) ==
        "in.json:3:130: a tuning record field \"bestSeconds\" must be a number, not a string");
  CHECK(errorOf(replace("\"summary\": \"x\", ", "")) ==
        "in.json:3:1: a tuning record lacks the field \"summary\"");
  CHECK(errorOf(replace("\"summary\"", "\"sumary\"")).find("lacks the field \"summary\"") !=
        std::string::npos);
  CHECK(errorOf(replace("\"tunedAt\": \"\"", "\"tunedAt\": \"\", \"sumary\": \"x\"")) ==
        "in.json:3:217: a tuning record has an unknown field \"sumary\"");
  CHECK(errorOf(replace("\"schedule\": \"none\"", "\"schedule\": \"\"")).find("empty") !=
        std::string::npos);
  CHECK(errorOf(replace("\"shapes\": \"[1]\"", "\"shapes\": \"[1]\", \"shapes\": \"[2]\""))
            .find("duplicate member \"shapes\"") != std::string::npos);
}
