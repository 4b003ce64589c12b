// Tuning records measured on a real GPU, used by builds without one: GPU target
// keys read back into targets, which record targets count as devices, and
// compileGpuKernels and AOT bundles lowering with the one tuned device of an
// architecture (or the one --tuned-on picks, or a clear error when the choice
// is ambiguous or matches nothing).
#include "CompileTestUtil.h"

#include "codegen/Target.h"
#include "compiler/GpuCompile.h"
#include "compiler/Pipeline.h"
#include "compiler/aot/AotBundle.h"
#include "compiler/tuning/OfflineGpuTarget.h"
#include "compiler/tuning/RecordSource.h"
#include "compiler/tuning/TuningKeys.h"
#include "frontend/TempDir.h"
#include "ir/kernel/Printer.h"
#include "passes/lower/Lower.h"
#include "runtime/tuning/TuningDatabase.h"

#include <fmt/format.h>

#include <sstream>

namespace kiln::test {
namespace {

using kiln::testing::TempDir;

codegen::GpuTarget h100Pcie() {
  codegen::GpuTarget target = *codegen::gpuTargetNamed("sm_90a");
  target.numSms = 114;
  return target;
}

std::string deviceFingerprint(const codegen::GpuTarget &target, std::string driver) {
  return tuning::targetFingerprint(target, {std::move(driver), "toolkit 13.0", "9.10.2"});
}

/// The contraction group's key on `fingerprint` and a schedule of its GPU
/// space other than the default, from lowering `graph` for `target`.
struct TunedContraction {
  tuning::GroupIdentity identity;
  std::string defaultSchedule, tunedSchedule;
};

TunedContraction probeContraction(const ir::Graph &graph, const codegen::GpuTarget &target) {
  TunedContraction found;
  CompileOptions probe;
  probe.tuning = TuningMode::Off;
  probe.chooseSchedule = [&](const ir::Graph &g, const passes::FusionGroup &group) {
    if (group.kind == passes::GroupKind::Contraction) {
      found.identity = tuning::groupIdentity(g, group);
      std::vector<lower::Schedule> space = lower::scheduleSpace(g, group, target);
      found.defaultSchedule = lower::scheduleStr(space.front());
      for (const lower::Schedule &schedule : space)
        if (lower::scheduleStr(schedule) != found.defaultSchedule) {
          found.tunedSchedule = lower::scheduleStr(schedule);
          break;
        }
    }
    return std::optional<lower::Schedule>{};
  };
  std::ostringstream dump;
  CompileReport report;
  REQUIRE(compiler::lowerProgram(graph, probe, target, "probe", dump, report));
  REQUIRE(!found.tunedSchedule.empty());
  return found;
}

tuning::TuningRecord recordOn(const TunedContraction &group, const std::string &fingerprint) {
  tuning::TuningRecord record;
  record.key = tuning::tuningKey(group.identity, fingerprint);
  record.schedule = group.tunedSchedule;
  record.bestSeconds = 1e-5;
  record.summary = group.identity.summary;
  return record;
}

void store(const std::string &path, const std::vector<tuning::TuningRecord> &records) {
  auto db = tuning::TuningDatabase::open(path);
  REQUIRE(db);
  REQUIRE(db->merge(records));
}

CompileOptions offlineOptions(const std::string &dbPath, std::string arch = "sm_90a") {
  CompileOptions options;
  options.target = TargetKind::Cuda;
  options.gpuArch = std::move(arch);
  options.tuningDbPath = dbPath;
  options.useKernelCache = false;
  return options;
}

std::string kernelText(const GpuKernels &kernels) {
  std::string text;
  for (const kir::Kernel &kernel : kernels.kernels)
    text += kir::printKernel(kernel);
  return text;
}

/// A dense layer and a softmax: a contraction group and a row-norm group.
struct DenseModel {
  CompileCase c{"tuned_device"};
  DenseModel() {
    Tensor x = c.input("x", {37, 96});
    Tensor dense = relu(matmul(x, c.param("w", {96, 80})) + c.param("b", {80}));
    c.output("y", softmax(dense));
    REQUIRE(c.graph().finalize());
  }
};

} // namespace

TEST_CASE("a GPU target key reads back into the same target", "[tuning]") {
  for (std::string_view arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    INFO(arch);
    codegen::GpuTarget target = *codegen::gpuTargetNamed(arch);
    auto back = codegen::gpuTargetFromCacheKey(target.cacheKey());
    REQUIRE(back);
    CHECK(back->cacheKey() == target.cacheKey());
  }
  codegen::GpuTarget pcie = h100Pcie();
  auto back = codegen::gpuTargetFromCacheKey(pcie.cacheKey());
  REQUIRE(back);
  CHECK(back->numSms == 114);
  CHECK(back->archSpecific);

  auto truncated = codegen::gpuTargetFromCacheKey("gpu;sm_90a;ptx80;sms=132");
  REQUIRE_FALSE(truncated);
  CHECK(truncated.error().code() == ErrorCode::FormatError);
  std::string badSms = pcie.cacheKey();
  badSms.replace(badSms.find("sms=114"), 7, "sms=lots");
  auto notNumber = codegen::gpuTargetFromCacheKey(badSms);
  REQUIRE_FALSE(notNumber);
  CHECK_THAT(notNumber.error().message(), Catch::Contains("field sms= is missing or not a number"));
  std::string unknownArch = pcie.cacheKey();
  unknownArch.replace(unknownArch.find("sm_90a"), 6, "sm_77");
  CHECK_FALSE(codegen::gpuTargetFromCacheKey(unknownArch));
}

TEST_CASE("only real devices of the architecture count as tuned devices", "[tuning]") {
  codegen::GpuTarget sm90a = *codegen::gpuTargetNamed("sm_90a");
  codegen::GpuTarget sm80 = *codegen::gpuTargetNamed("sm_80");
  std::string device = deviceFingerprint(h100Pcie(), "13000");
  std::vector<std::string> fingerprints = {
      device,
      compiler::simGpuFingerprint(sm90a),     // the simulator is no device
      compiler::offlineGpuFingerprint(sm90a), // nor is a build without one
      deviceFingerprint(sm80, "13000"),       // another architecture
      device,                                 // counted once
      tuning::targetFingerprint(codegen::hostCpuTarget()),
  };
  CHECK(compiler::tunedDevicesOf(fingerprints, "sm_90a") == std::vector<std::string>{device});
  CHECK(compiler::tunedDevicesOf(fingerprints, "sm_90").empty());
  CHECK(compiler::describeTunedDevice(device) ==
        "sm_90a device (114 SMs, driver 13000, toolkit toolkit 13.0, cuDNN 9.10.2)");
}

TEST_CASE("an offline GPU compile lowers with the records of the one tuned device",
          "[tuning]") {
  DenseModel model;
  const ir::Graph &graph = model.c.graph().ir();
  codegen::GpuTarget device = h100Pcie();
  TunedContraction contraction = probeContraction(graph, device);
  INFO("tuned: " << contraction.tunedSchedule);
  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  std::string fingerprint = deviceFingerprint(device, "13000");
  store(path, {recordOn(contraction, fingerprint)});

  CompileReport report;
  auto tuned = compileGpuKernels(graph, offlineOptions(path), &report);
  REQUIRE(tuned);
  CHECK(report.tuning == fmt::format("1 of 2 groups from {}; schedules for the tuned sm_90a "
                                     "device (114 SMs, driver 13000, toolkit toolkit 13.0, "
                                     "cuDNN 9.10.2)",
                                     path));
  REQUIRE(report.tuningRecords.size() == 1);
  CHECK_THAT(report.tuningRecords[0], Catch::Contains(contraction.tunedSchedule));
  CompileOptions off = offlineOptions(path);
  off.tuning = TuningMode::Off;
  auto untuned = compileGpuKernels(graph, off);
  REQUIRE(untuned);
  CHECK(kernelText(*tuned) != kernelText(*untuned));

  // The bundle carries the record it used and names the device.
  compiler::AotOptions aot;
  aot.target = TargetKind::Cuda;
  aot.gpuArchs = {"sm_90a", "sm_80"};
  aot.compile = offlineOptions(path);
  compiler::AotReport aotReport;
  REQUIRE(compiler::buildBundle(graph, aot, &aotReport));
  REQUIRE(aotReport.records.size() == 1);
  CHECK(aotReport.records[0].key.target == fingerprint);
  CHECK(aotReport.records[0].schedule == contraction.tunedSchedule);
  bool named = false;
  for (const std::string &note : aotReport.notes)
    named = named || note.starts_with("sm_90a: schedules for the tuned sm_90a device (114 SMs");
  CHECK(named);
  // sm_80 has no tuned device: its build keeps the offline fingerprint.
  REQUIRE(aotReport.tuning.size() == 2);
  CHECK(aotReport.tuning[1] == "sm_80: 0 of 2 groups from " + path);

  // Replay still demands a record for every tunable group: the softmax group has none.
  CompileOptions replay = offlineOptions(path);
  replay.tuning = TuningMode::Replay;
  auto replayed = compileGpuKernels(graph, replay);
  CHECK_FALSE(replayed);
}

TEST_CASE("records of several devices need --tuned-on to pick one", "[tuning]") {
  DenseModel model;
  const ir::Graph &graph = model.c.graph().ir();
  codegen::GpuTarget pcie = h100Pcie();
  codegen::GpuTarget sxm = *codegen::gpuTargetNamed("sm_90a");
  TunedContraction onPcie = probeContraction(graph, pcie);
  TunedContraction onSxm = probeContraction(graph, sxm);
  TempDir dir;
  std::string path = dir.file("tuning.sqlite");
  store(path, {recordOn(onPcie, deviceFingerprint(pcie, "13000")),
               recordOn(onSxm, deviceFingerprint(sxm, "13010"))});

  auto ambiguous = compileGpuKernels(graph, offlineOptions(path));
  REQUIRE_FALSE(ambiguous);
  CHECK_THAT(ambiguous.error().message(),
             Catch::Contains("holds records of 2 sm_90a devices: choose one"));
  CHECK_THAT(ambiguous.error().str(), Catch::Contains("114 SMs, driver 13000"));
  CHECK_THAT(ambiguous.error().str(), Catch::Contains("132 SMs, driver 13010"));

  CompileOptions pick = offlineOptions(path);
  pick.gpuTuningDevice = "driver=13010";
  CompileReport report;
  REQUIRE(compileGpuKernels(graph, pick, &report));
  CHECK_THAT(report.tuning, Catch::StartsWith("1 of 2 groups from "));
  CHECK_THAT(report.tuning, Catch::EndsWith("(132 SMs, driver 13010, toolkit toolkit 13.0, "
                                            "cuDNN 9.10.2)"));

  // The choice names a device of the architectures that have some: sm_80 has
  // none here, so a bundle for both builds sm_80 for its stock target.
  compiler::AotOptions aot;
  aot.target = TargetKind::Cuda;
  aot.gpuArchs = {"sm_90a", "sm_80"};
  aot.compile = pick;
  compiler::AotReport aotReport;
  REQUIRE(compiler::buildBundle(graph, aot, &aotReport));
  REQUIRE(aotReport.records.size() == 1);
  CHECK_THAT(aotReport.records[0].key.target, Catch::Contains("driver=13010"));

  pick.gpuTuningDevice = "driver=99999";
  auto none = compileGpuKernels(graph, pick);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message(), Catch::Contains("no sm_90a device with records in"));
  CHECK_THAT(none.error().message(), Catch::Contains("matches 'driver=99999'"));
  CHECK_THAT(none.error().str(), Catch::Contains("114 SMs, driver 13000"));

  // Asking for a device without any database is an error too, not a silent default.
  CompileOptions noDb = offlineOptions(dir.file("missing.sqlite"));
  noDb.gpuTuningDevice = "driver=13000";
  auto missing = compileGpuKernels(graph, noDb);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(), Catch::Contains("there is no tuning database at"));
}

} // namespace kiln::test

namespace kiln::test {

TEST_CASE("the target fingerprint is made only when a database is there to look in",
          "[tuning]") {
  int made = 0;
  auto fingerprint = compiler::LazyFingerprint::deferred([&] {
    ++made;
    return std::string("gpu;test");
  });
  TempDir dir;
  CompileOptions options;
  options.tuningDbPath = dir.file("missing.sqlite");
  auto none = compiler::RecordSource::open(options, fingerprint);
  REQUIRE(none);
  CHECK_FALSE(none->active());
  CHECK(made == 0);

  store(options.tuningDbPath, {});
  auto some = compiler::RecordSource::open(options, fingerprint);
  REQUIRE(some);
  REQUIRE(some->active());
  tuning::GroupIdentity group{"group contraction", "in0=8x8", "summary"};
  REQUIRE(some->find(group));
  CHECK(made == 1);
  CHECK(some->keyFor(group).target == "gpu;test");
  CHECK(made == 1); // computed once, shared by copies
  CHECK(fingerprint.computed());
}

} // namespace kiln::test
