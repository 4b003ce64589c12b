// compile() with tuning records: a record's schedule is used (and still
// computes what the reference does), Off ignores records, Replay demands them,
// unusable records are warned about and never trusted, library records are
// kept for the CUDA path, and the schedule hook wins over records.
#include "CompileTestUtil.h"

#include "codegen/Target.h"
#include "compiler/Pipeline.h"
#include "compiler/aot/AotBundle.h"
#include "compiler/tuning/TuningKeys.h"
#include "frontend/TempDir.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/tuning/TuningDatabase.h"
#include "runtime/tuning/TuningRecordJson.h"

#include <fmt/format.h>

#include <cstring>
#include <sstream>

namespace kiln::test {
namespace {

using kiln::testing::TempDir;

/// A dense layer and a softmax: a contraction group and a row-norm group.
void buildDense(CompileCase &c) {
  Tensor x = c.input("x", {9, 20});
  Tensor dense = relu(matmul(x, c.param("w", {20, 12})) + c.param("b", {12}));
  c.output("y", softmax(dense));
}

/// What one compile with the default schedules saw of each group: its key on
/// this CPU and its schedule space.
struct GroupInfo {
  tuning::TuningKey key;
  std::string summary;
  passes::GroupKind kind;
  std::vector<lower::Schedule> space;
};

/// Graph passes, fusion and lowering for this CPU without codegen (what the
/// schedule choice needs, at a fraction of a compile's time); returns the fused dump.
std::string lowerOnly(const ir::Graph &graph, CompileOptions options,
                      CompileReport *report = nullptr) {
  std::ostringstream dump;
  options.dump = kDumpFused;
  CompileReport local;
  codegen::CpuTarget target = codegen::hostCpuTarget();
  auto program = compiler::lowerProgram(graph, options, target, tuning::targetFingerprint(target),
                                        dump, report ? *report : local);
  if (!program)
    FAIL(program.error().str());
  return dump.str();
}

std::vector<GroupInfo> probeGroups(const ir::Graph &graph) {
  std::vector<GroupInfo> groups;
  codegen::CpuTarget target = codegen::hostCpuTarget();
  std::string fingerprint = tuning::targetFingerprint(target);
  CompileOptions probe;
  probe.tuning = TuningMode::Off;
  probe.chooseSchedule = [&](const ir::Graph &g, const passes::FusionGroup &group) {
    tuning::GroupIdentity identity = tuning::groupIdentity(g, group);
    groups.push_back({tuning::tuningKey(identity, fingerprint), identity.summary, group.kind,
                      lower::scheduleSpace(g, group, target)});
    return std::optional<lower::Schedule>{};
  };
  lowerOnly(graph, probe);
  return groups;
}

const GroupInfo &contractionOf(const std::vector<GroupInfo> &groups) {
  for (const GroupInfo &group : groups)
    if (group.kind == passes::GroupKind::Contraction)
      return group;
  FAIL("no contraction group");
  return groups.front();
}

tuning::TuningRecord recordFor(const GroupInfo &group, std::string schedule) {
  tuning::TuningRecord record;
  record.key = group.key;
  record.schedule = std::move(schedule);
  record.bestSeconds = 1e-5;
  record.defaultSeconds = 2e-5;
  record.candidatesTimed = static_cast<int>(group.space.size());
  record.summary = group.summary;
  return record;
}

void store(const std::string &path, const std::vector<tuning::TuningRecord> &records) {
  auto db = tuning::TuningDatabase::open(path);
  REQUIRE(db);
  REQUIRE(db->merge(records));
}

/// A schedule of the space that is not the default (the first entry).
std::string nonDefaultSchedule(const GroupInfo &group) {
  REQUIRE(group.space.size() > 1);
  std::string first = lower::scheduleStr(group.space.front());
  for (const lower::Schedule &s : group.space)
    if (lower::scheduleStr(s) != first)
      return lower::scheduleStr(s);
  FAIL("every schedule of the space prints as the default");
  return first;
}

} // namespace

TEST_CASE("compile lowers a group with its tuning record's schedule", "[compiler][tuning]") {
  CompileCase c("tuned_dense");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  std::vector<GroupInfo> groups = probeGroups(c.graph().ir());
  REQUIRE(groups.size() == 2);
  const GroupInfo &dense = contractionOf(groups);
  std::string tuned = nonDefaultSchedule(dense);
  INFO("tuned schedule: " << tuned);

  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  store(path, {recordFor(dense, tuned)});

  std::ostringstream dump;
  CompileOptions options;
  options.tuningDbPath = path;
  options.dump = kDumpFused;
  options.dumpStream = &dump;
  CompileReport report;
  c.check(options, &report);
  CHECK(dump.str().find("schedule: " + tuned + " (tuning record)") != std::string::npos);
  CHECK(report.tuning == "1 of 2 groups from " + path);
  REQUIRE(report.tuningRecords.size() == 1);
  CHECK(report.tuningRecords[0].find(tuned) != std::string::npos);
  CHECK(report.tuningRecords[0].find("2.00x") != std::string::npos);
  CHECK(report.warnings.empty());

  // Off ignores the database.
  options.tuning = TuningMode::Off;
  CompileReport offReport;
  std::string offDump = lowerOnly(c.graph().ir(), options, &offReport);
  CHECK(offDump.find(tuned) == std::string::npos);
  CHECK(offDump.find(lower::scheduleStr(dense.space.front())) != std::string::npos);
  CHECK(offReport.tuning == "off");

  // The schedule hook wins over records.
  options.tuning = TuningMode::Use;
  options.chooseSchedule = [&](const ir::Graph &, const passes::FusionGroup &group) {
    return group.kind == passes::GroupKind::Contraction
               ? std::optional<lower::Schedule>(dense.space.front())
               : std::nullopt;
  };
  std::string hookDump = lowerOnly(c.graph().ir(), options);
  CHECK(hookDump.find(tuned) == std::string::npos);
  CHECK(hookDump.find(lower::scheduleStr(dense.space.front())) != std::string::npos);
}

TEST_CASE("Use with no database file compiles with defaults and creates nothing",
          "[compiler][tuning]") {
  CompileCase c("untuned");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  TempDir dir;
  CompileOptions options;
  options.tuningDbPath = dir.file("absent/tuning.sqlite");
  CompileReport report;
  lowerOnly(c.graph().ir(), options, &report);
  CHECK(report.tuning == "no database (" + options.tuningDbPath + " does not exist)");
  CHECK(dir.entries().empty());

  // A file that is not a tuning database is an error, not silently skipped.
  std::string foreign = dir.file("foreign.sqlite");
  kiln::testing::writeBytes(foreign, {'h', 'i', '\n'});
  options.tuningDbPath = foreign;
  auto compiled = compile(c.graph().ir(), options);
  REQUIRE(!compiled);
  CHECK(compiled.error().message().find(foreign) != std::string::npos);
}

TEST_CASE("Replay needs a record for every tunable group", "[compiler][tuning]") {
  CompileCase c("replayed");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  std::vector<GroupInfo> groups = probeGroups(c.graph().ir());
  const GroupInfo &dense = contractionOf(groups);
  const GroupInfo &softmaxGroup = &groups[0] == &dense ? groups[1] : groups[0];
  REQUIRE(softmaxGroup.space.size() > 1);

  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  CompileOptions options;
  options.tuning = TuningMode::Replay;
  options.tuningDbPath = path;
  auto missingDb = compile(c.graph().ir(), options);
  REQUIRE(!missingDb);
  CHECK(missingDb.error().message().find(path + ", which does not exist") != std::string::npos);
  CHECK(dir.entries().empty());

  store(path, {recordFor(dense, nonDefaultSchedule(dense))});
  auto missingRecord = compile(c.graph().ir(), options);
  REQUIRE(!missingRecord);
  const Error &error = missingRecord.error();
  INFO(error.str());
  CHECK(error.message().find("has no tuning record in " + path) != std::string::npos);
  CHECK(error.message().find(softmaxGroup.summary) != std::string::npos);
  REQUIRE(!error.notes().empty());
  const std::string &signature = softmaxGroup.key.signature;
  CHECK(error.notes()[0].find(signature.substr(0, signature.find('\n'))) != std::string::npos);
  CHECK(error.notes()[0].find(softmaxGroup.key.target) != std::string::npos);
  CHECK(error.notes()[0].find(softmaxGroup.key.shapes) != std::string::npos);

  store(path, {recordFor(softmaxGroup, lower::scheduleStr(softmaxGroup.space.back()))});
  CompileReport report;
  c.check(options, &report);
  CHECK(report.tuning == "2 of 2 groups from " + path);
}

TEST_CASE("unusable records are ignored with a warning, and refused by Replay",
          "[compiler][tuning]") {
  CompileCase c("bad_records");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  std::vector<GroupInfo> groups = probeGroups(c.graph().ir());
  const GroupInfo &dense = contractionOf(groups);
  const GroupInfo &softmaxGroup = &groups[0] == &dense ? groups[1] : groups[0];
  TempDir dir;
  int files = 0;
  for (const char *bad : {"matmul mc=oops", "pointwise vw=8 par=1"}) {
    INFO(bad);
    std::string path = dir.file(fmt::format("{}.sqlite", files++));
    // The softmax's record is good: only the contraction's is refused.
    store(path, {recordFor(dense, bad),
                 recordFor(softmaxGroup, lower::scheduleStr(softmaxGroup.space.front()))});
    CompileOptions options;
    options.tuningDbPath = path;
    CompileReport report;
    std::string dump = lowerOnly(c.graph().ir(), options, &report);
    REQUIRE(report.warnings.size() == 1);
    CHECK(report.warnings[0].find("not used") != std::string::npos);
    CHECK(report.warnings[0].find(dense.summary) != std::string::npos);
    CHECK(report.tuning == "1 of 2 groups from " + path);
    CHECK(dump.find(lower::scheduleStr(dense.space.front())) != std::string::npos);

    options.tuning = TuningMode::Replay;
    auto replayed = compile(c.graph().ir(), options);
    REQUIRE(!replayed);
    CHECK(replayed.error().message().find("tuning replay: tuning record for") !=
          std::string::npos);
  }
}

TEST_CASE("a library record is kept for the group and lowered with the default schedule",
          "[compiler][tuning]") {
  CompileCase c("library_record");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  std::vector<GroupInfo> groups = probeGroups(c.graph().ir());
  const GroupInfo &dense = contractionOf(groups);
  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  tuning::TuningRecord library = recordFor(dense, "algo=implicit_precomp_gemm");
  library.backend = "cudnn";
  store(path, {library});

  CompileOptions options;
  options.tuningDbPath = path;
  CompileReport report;
  std::ostringstream dump;
  codegen::CpuTarget target = codegen::hostCpuTarget();
  // lowerProgram itself: groupRecords is compiler-internal.
  auto program = compiler::lowerProgram(c.graph().ir(), options, target,
                                        tuning::targetFingerprint(target), dump, report);
  REQUIRE(program);
  int kept = 0;
  for (size_t g = 0; g < program->groupRecords.size(); ++g)
    if (program->groupRecords[g]) {
      ++kept;
      CHECK(program->groupRecords[g]->backend == "cudnn");
      CHECK(program->fusion.groups[g].kind == passes::GroupKind::Contraction);
    }
  CHECK(kept == 1);
  CHECK(report.tuning == "0 of 2 groups from " + path);
  REQUIRE(report.tuningRecords.size() == 1);
  CHECK(report.tuningRecords[0].find("cudnn") != std::string::npos);
}

TEST_CASE("an AOT bundle lowers with the tuning records and carries them", "[compiler][tuning]") {
  CompileCase c("tuned_bundle");
  buildDense(c);
  REQUIRE(c.graph().finalize());
  std::vector<GroupInfo> groups = probeGroups(c.graph().ir());
  const GroupInfo &dense = contractionOf(groups);
  std::string tuned = nonDefaultSchedule(dense);
  INFO("tuned schedule: " << tuned);
  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  store(path, {recordFor(dense, tuned)});

  compiler::AotOptions options;
  options.target = TargetKind::Cpu;
  options.compile.tuningDbPath = path;
  compiler::AotReport report;
  auto bytes = compiler::buildBundle(c.graph().ir(), options, &report);
  REQUIRE(bytes);
  REQUIRE(report.records.size() == 1);
  CHECK(report.records[0].schedule == tuned);
  REQUIRE(report.tuning.size() == 1);
  CHECK(report.tuning[0] == "cpu: 1 of 2 groups from " + path);

  auto loaded = runtime::bundle::loadBundleFromBytes(*bytes, {}, "tuned.kiln");
  REQUIRE(loaded);
  auto carried = tuning::tuningExportFromJson(loaded->tuningRecords, "tuned.kiln");
  REQUIRE(carried);
  REQUIRE(carried->records.size() == 1);
  CHECK(carried->records[0].key == dense.key);
  CHECK(carried->records[0].schedule == tuned);

  // The bundle computes exactly what compile() does with the same record.
  CompileOptions compileOptions;
  compileOptions.tuningDbPath = path;
  NamedTensors expected = c.check(compileOptions);
  auto outputs = loaded->model.run(c.tensors());
  REQUIRE(outputs);
  for (const auto &[name, tensor] : expected) {
    INFO("output " << name);
    REQUIRE(outputs->contains(name));
    CHECK(std::memcmp(outputs->at(name).bytes().data(), tensor.bytes().data(),
                      tensor.byteSize()) == 0);
  }
}

} // namespace kiln::test
