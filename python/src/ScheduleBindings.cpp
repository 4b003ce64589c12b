// Research hooks over kiln's schedules: the fusion groups of a model and each one's schedule
// space (kiln.groups, kiln.schedule_space), the autotuner (kiln.tune, kiln.sweep) and the
// sweep plot `kiln tune --svg` draws. Everything here calls the compiler's and the tuner's
// own functions; the rows handed to Python are their results, flattened.
#include "CompileOptionsArgs.h"
#include "PyGraph.h"
#include "PythonErrors.h"
#include "SweepRows.h"

#include "compiler/Compile.h"
#include "compiler/Pipeline.h"
#include "compiler/tuner/GroupProblem.h"
#include "compiler/tuner/SweepExport.h"
#include "compiler/tuner/Tuner.h"
#include "compiler/tuning/TuningKeys.h"
#include "passes/lower/Lower.h"
#include "runtime/tuning/TuningDatabase.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <sstream>

namespace py = pybind11;

namespace kiln::python {
namespace {

/// The graph passes, fusion and lowering a compile runs, with heuristic schedules.
compiler::LoweredProgram lowerWithDefaults(const GraphHandle &graph, CompileOptions options,
                                           const TargetChoice &choice) {
  valueOrThrow(graph->finalize());
  options.tuning = TuningMode::Off;
  options.dump = 0;
  std::ostringstream noDump;
  CompileReport report;
  std::optional<Expected<compiler::LoweredProgram>> program;
  {
    py::gil_scoped_release release;
    program.emplace(
        compiler::lowerProgram(graph->ir(), options, choice.target, choice.fingerprint, noDump,
                               report));
  }
  return valueOrThrow(std::move(*program));
}

const passes::FusionGroup &kernelGroup(const compiler::LoweredProgram &program, int groupId) {
  std::string ids;
  for (const passes::FusionGroup &group : program.fusion.groups) {
    if (!passes::needsKernel(group))
      continue;
    if (group.id == groupId)
      return group;
    ids += (ids.empty() ? "" : ", ") + std::to_string(group.id);
  }
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("the model has no group {} with a kernel (its kernel "
                                    "groups: {})",
                                    groupId, ids.empty() ? "none" : ids))};
}

/// One dict per fusion group that becomes a kernel: what the fused dump and the tuner call
/// it, and its whole schedule space as text (the default first).
py::list groupsOf(const GraphHandle &graph, const CompileOptions &options) {
  TargetChoice choice = valueOrThrow(chooseTarget(options));
  compiler::LoweredProgram program = lowerWithDefaults(graph, options, choice);
  py::list groups;
  for (const passes::FusionGroup &group : program.fusion.groups) {
    if (!passes::needsKernel(group))
      continue;
    tuning::GroupIdentity identity = tuning::groupIdentity(*program.graph, group);
    std::vector<std::string> space;
    for (const lower::Schedule &schedule :
         lower::scheduleSpace(*program.graph, group, choice.target))
      space.push_back(lower::scheduleStr(schedule));
    py::dict entry;
    entry["id"] = group.id;
    entry["kind"] = std::string(passes::groupKindName(group.kind));
    entry["summary"] = identity.summary;
    entry["signature"] = identity.signature;
    entry["shapes"] = identity.shapes;
    entry["target"] = choice.fingerprint.get();
    entry["space"] = space;
    groups.append(std::move(entry));
  }
  return groups;
}

/// Runs the autotuner on the whole graph, or on one group of it (extracted as the tuner
/// extracts every group), and stores its records (and a sweep's candidates) when `db` names
/// a database. Returns {"target", "seconds", "candidates_timed", "speedup", "sweep_id",
/// "rows": one dict per timed candidate}.
py::dict tune(const GraphHandle &graph, const CompileOptions &options, int groupId,
              const tuning::TunerOptions &tunerOptions, const std::string &db,
              const std::string &label) {
  std::unique_ptr<ir::Graph> extracted;
  if (groupId >= 0) {
    TargetChoice choice = valueOrThrow(chooseTarget(options));
    compiler::LoweredProgram program = lowerWithDefaults(graph, options, choice);
    extracted = valueOrThrow(
        tuning::extractGroupGraph(*program.graph, kernelGroup(program, groupId)));
  } else {
    valueOrThrow(graph->finalize());
  }
  // The database is opened before any timing, so that a bad path loses no work.
  std::optional<tuning::TuningDatabase> database;
  if (!db.empty())
    database.emplace(valueOrThrow(tuning::TuningDatabase::open(db)));
  std::optional<Expected<tuning::TuneReport>> tuned;
  {
    py::gil_scoped_release release;
    tuned.emplace(tuning::tuneGraph(extracted ? *extracted : graph->ir(), options, tunerOptions));
  }
  tuning::TuneReport report = valueOrThrow(std::move(*tuned));
  py::dict result;
  result["target"] = report.target;
  result["seconds"] = report.seconds;
  result["candidates_timed"] = report.candidatesTimed;
  result["speedup"] = report.speedup();
  result["sweep_id"] = py::none();
  if (database) {
    for (const tuning::TuningRecord &record :
         tuning::recordsFrom(report, report.targetFingerprint))
      valueOrThrow(database->put(record));
    if (tunerOptions.exhaustive)
      result["sweep_id"] = valueOrThrow(database->addSweep(label, tuning::sweepFrom(report)));
  }
  py::list rows;
  for (const tuning::TunedGroup &group : report.groups) {
    tuning::SweepGroup sweepGroup{tuning::tuningKey(group.identity, report.targetFingerprint),
                                  group.identity.summary, group.candidates};
    for (size_t i = 0; i < group.candidates.size(); ++i) {
      py::dict row = sweepRow(sweepGroup, i, groupId >= 0 ? groupId : group.groupId,
                              int(i) == group.winner);
      row["kind"] = group.kind;
      row["space_index"] = group.spaceIndices[i];
      row["space_size"] = group.spaceSize;
      rows.append(std::move(row));
    }
  }
  result["rows"] = std::move(rows);
  return result;
}

} // namespace

void bindSchedules(py::module_ &module) {
  module.def(
      "_groups",
      [](const GraphHandle &graph, const std::string &target, const std::string &precision,
         const std::string &backend, const std::string &gpuArch) {
        return groupsOf(graph, compileOptionsOf(target, precision, backend, gpuArch));
      },
      py::arg("graph"), py::arg("target"), py::arg("precision"), py::arg("backend"),
      py::arg("gpu_arch"));
  module.def(
      "_tune",
      [](const GraphHandle &graph, const std::string &target, const std::string &precision,
         const std::string &backend, const std::string &gpuArch, int group, bool exhaustive,
         double budgetSeconds, int maxTrials, int runs, uint64_t seed, const std::string &db,
         const std::string &label) {
        CompileOptions options = compileOptionsOf(target, precision, backend, gpuArch);
        tuning::TunerOptions tunerOptions;
        tunerOptions.exhaustive = exhaustive;
        tunerOptions.budgetSeconds = budgetSeconds;
        tunerOptions.maxTrials = maxTrials;
        if (runs > 0)
          tunerOptions.timedRuns = runs;
        tunerOptions.seed = seed;
        return tune(graph, options, group, tunerOptions, db, label);
      },
      py::arg("graph"), py::arg("target"), py::arg("precision"), py::arg("backend"),
      py::arg("gpu_arch"), py::arg("group"), py::arg("exhaustive"), py::arg("budget"),
      py::arg("trials"), py::arg("runs"), py::arg("seed"), py::arg("db"), py::arg("label"));
  module.def(
      "_sweep_svg",
      [](const py::list &rows, const std::string &sortBy) {
        tuning::SweepPlotOptions plot;
        plot.sortBy = sortBy;
        return tuning::sweepSvg(sweepGroupsOf(rows), plot);
      },
      py::arg("rows"), py::arg("sort_by"),
      "The SVG `kiln tune --sweep --svg` draws, of sweep rows (kiln.sweep's records).");
}

} // namespace kiln::python
