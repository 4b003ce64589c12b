// kiln tune-db ls|export|import|prune: the tuning database, as users see it.
#include "codegen/Target.h"
#include "compiler/CudaCompile.h"
#include "compiler/Devices.h"
#include "compiler/GpuModuleCache.h"
#include "compiler/tuning/TuningKeys.h"
#include "runtime/cache/AtomicFile.h"
#include "runtime/tuning/TuningDatabase.h"
#include "runtime/tuning/TuningRecordJson.h"
#include "support/RegularFile.h"
#include "support/Version.h"
#include "tools/kiln/Commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace kiln::tool {

namespace {

namespace fs = std::filesystem;

constexpr const char *kTuneDbHelp = R"(usage: kiln tune-db <ls|export|import|prune> [options]

The tuning database holds, per fusion group, target and kiln version, the
schedule a tuning run chose and its measured times; `kiln compile` and
`kiln run` use its records (--tuning). See docs/tuning.md.

  ls              list the records: group, shapes, target, kiln version,
                  schedule, best and default time, speed-up, when tuned
  export [FILE]   write every record and sweep as JSON to FILE (written
                  atomically) or to stdout
  import FILE     merge the records and sweeps of a JSON export (a record
                  with the same key is replaced); prints what changed
  prune FILTERS   remove the records matching every filter given:
      --other-versions    tuned by a kiln other than this one ({})
      --other-targets     for a target other than this machine's CPU (and
                          GPU, when one is usable)
      --older-than DAYS   tuned more than DAYS days ago
      --match TEXT        whose group signature or summary contains TEXT
      --all               every record and sweep (alone)

options:
  --db PATH   the database (default: $KILN_TUNING_DB, else tuning.sqlite in
              the kernel cache directory)
  --help      print this help and exit
)";

int usageError(std::string_view message) { return usageErrorWithHelp("tune-db", message); }

int failure(const Error &error) { return reportError("tune-db", error); }

Expected<std::string> databasePath(const Args &args) {
  std::string path = args.value("--db").value_or(tuning::TuningDatabase::defaultPath());
  if (path.empty())
    return makeError(ErrorCode::NotFound, "no tuning database: the kernel cache directory is "
                                          "off and $KILN_TUNING_DB is unset; pass --db PATH");
  return path;
}

/// "cpu x86_64-pc-linux-gnu znver4" of a long fingerprint: its first three
/// fields (separated by ';' or spaces).
std::string shortTarget(const std::string &fingerprint) {
  std::string result;
  int fields = 0;
  size_t at = 0;
  while (at < fingerprint.size() && fields < 3) {
    size_t end = fingerprint.find_first_of("; ", at);
    if (end == std::string::npos)
      end = fingerprint.size();
    if (end > at) {
      result += (fields++ ? " " : "") + fingerprint.substr(at, end - at);
    }
    at = end + 1;
  }
  return result;
}

std::string formatSeconds(double seconds) {
  if (seconds <= 0)
    return "-";
  if (seconds < 1e-3)
    return fmt::format("{:.1f} us", seconds * 1e6);
  if (seconds < 1)
    return fmt::format("{:.3f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

int list(tuning::TuningDatabase &db) {
  auto records = db.list();
  if (!records)
    return failure(records.error());
  auto sweeps = db.sweeps();
  if (!sweeps)
    return failure(sweeps.error());
  std::vector<std::vector<std::string>> rows = {
      {"group", "shapes", "target", "kiln", "schedule", "best", "default", "speed-up", "tuned at"}};
  for (const tuning::TuningRecord &r : *records) {
    std::string speedup = r.bestSeconds > 0 && r.defaultSeconds > 0
                              ? fmt::format("{:.2f}x", r.defaultSeconds / r.bestSeconds)
                              : "-";
    std::string schedule = r.backend == "kiln" ? r.schedule : r.backend + ": " + r.schedule;
    rows.push_back({r.summary, r.key.shapes, shortTarget(r.key.target), r.key.kilnVersion,
                    schedule, formatSeconds(r.bestSeconds), formatSeconds(r.defaultSeconds),
                    speedup, r.tunedAt});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  if (!records->empty())
    for (const auto &row : rows) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c)
        line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], widths[c]);
      fmt::print("{}\n", line);
    }
  fmt::print("{} record{} and {} sweep{} in {}\n", records->size(),
             records->size() == 1 ? "" : "s", sweeps->size(), sweeps->size() == 1 ? "" : "s",
             db.path());
  return kExitOk;
}

Expected<tuning::TuningExport> collect(tuning::TuningDatabase &db) {
  tuning::TuningExport data;
  KILN_TRY(data.records, db.list());
  KILN_TRY(std::vector<tuning::TuningDatabase::SweepInfo> sweeps, db.sweeps());
  for (const auto &info : sweeps) {
    KILN_TRY(std::vector<tuning::SweepGroup> groups, db.sweep(info.id));
    data.sweeps.push_back({info.label, info.createdAt, std::move(groups)});
  }
  return data;
}

int exportTo(tuning::TuningDatabase &db, const std::optional<std::string> &file) {
  auto data = collect(db);
  if (!data)
    return failure(data.error());
  std::string text = tuning::tuningExportToJson(*data);
  if (!file) {
    fmt::print("{}", text);
    return kExitOk;
  }
  if (auto written = runtime::replaceFile(*file, text, "tuning export"); !written)
    return failure(written.error());
  fmt::print(stderr, "exported {} records and {} sweeps to {}\n", data->records.size(),
             data->sweeps.size(), *file);
  return kExitOk;
}

int importFrom(const std::string &dbPath, const std::string &file) {
  auto text = readRegularFile(file, "tuning export", tuning::kMaxTuningExportBytes);
  if (!text)
    return failure(text.error());
  // Parse everything before touching the database: a bad file changes nothing.
  auto data = tuning::tuningExportFromJson(*text, file);
  if (!data)
    return failure(data.error());
  auto db = tuning::TuningDatabase::open(dbPath, /*create=*/true);
  if (!db)
    return failure(db.error());
  auto counts = db->merge(data->records);
  if (!counts)
    return failure(counts.error());
  for (const tuning::LabeledSweep &sweep : data->sweeps)
    if (auto added = db->addSweep(sweep.label, sweep.groups); !added)
      return failure(added.error());
  fmt::print("imported {} record{} ({} added, {} replaced) and {} sweep{} into {}\n",
             data->records.size(), data->records.size() == 1 ? "" : "s", counts->added,
             counts->replaced, data->sweeps.size(), data->sweeps.size() == 1 ? "" : "s",
             db->path());
  return kExitOk;
}

/// The fingerprints of this machine's targets: its CPU and, when usable, its GPU.
std::vector<std::string> hostFingerprints() {
  std::vector<std::string> fingerprints = {tuning::targetFingerprint(codegen::hostCpuTarget())};
  if (auto gpu = compiler::cudaDevice()) {
    const runtime::cuda::CudaDeviceProperties &device = gpu->device->properties();
    if (auto target = compiler::gpuTargetFor(device, ""))
      fingerprints.push_back(compiler::deviceGpuFingerprint(*target, device));
  }
  return fingerprints;
}

int prune(tuning::TuningDatabase &db, const Args &args) {
  bool all = args.has("--all");
  tuning::TuningDatabase::PruneFilter filter;
  if (args.has("--other-versions"))
    filter.otherVersionsThan = std::string(kilnVersion());
  if (args.has("--other-targets"))
    filter.otherTargetsThan = hostFingerprints();
  if (args.has("--older-than")) {
    std::string text = *args.value("--older-than");
    char *end = nullptr;
    double days = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(days >= 0))
      return usageError(fmt::format("--older-than expects a number of days, got '{}'", text));
    filter.olderThanDays = days;
  }
  if (auto text = args.value("--match")) {
    if (text->empty())
      return usageError("--match needs a text");
    filter.matching = *text;
  }
  if (all && !filter.empty())
    return usageError("--all removes everything: it takes no other filter");
  if (!all && filter.empty())
    return usageError("prune needs a filter (--other-versions, --other-targets, --older-than, "
                      "--match) or --all");
  auto removed = all ? db.clear() : db.prune(filter);
  if (!removed)
    return failure(removed.error());
  fmt::print("removed {} record{} from {}\n", *removed, *removed == 1 ? "" : "s", db.path());
  return kExitOk;
}

} // namespace

int tuneDbCommand(const std::vector<std::string> &words) {
  auto args = parseCommandArgs("tune-db", words, {"--db", "--older-than", "--match"},
                               {"--help", "--other-versions", "--other-targets", "--all"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kTuneDbHelp, kilnVersion());
    return kExitOk;
  }
  const std::vector<std::string> &positional = args->positional();
  if (positional.empty())
    return usageError("expected a subcommand: ls, export, import or prune");
  const std::string &sub = positional[0];
  size_t expected = sub == "import" ? 2 : 1;
  if (sub != "ls" && sub != "export" && sub != "import" && sub != "prune")
    return usageError(fmt::format("unknown subcommand '{}' (ls, export, import, prune)", sub));
  bool pruneFlags = args->has("--other-versions") || args->has("--other-targets") ||
                    args->has("--older-than") || args->has("--match") || args->has("--all");
  if (pruneFlags && sub != "prune")
    return usageError(fmt::format("the prune filters do not apply to '{}'", sub));
  if (positional.size() != expected && !(sub == "export" && positional.size() == 2))
    return usageError(sub == "import" ? "import expects one JSON file"
                                      : fmt::format("'{}' takes no further argument", sub));

  auto path = databasePath(*args);
  if (!path)
    return failure(path.error());
  if (sub == "import")
    return importFrom(*path, positional[1]);
  // Reading and pruning never create a database.
  auto db = tuning::TuningDatabase::open(*path, /*create=*/false);
  if (!db)
    return failure(db.error());
  if (sub == "ls")
    return list(*db);
  if (sub == "export")
    return exportTo(*db, positional.size() == 2 ? std::optional(positional[1]) : std::nullopt);
  return prune(*db, *args);
}

} // namespace kiln::tool
