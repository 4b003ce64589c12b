// kiln.TuningDatabase: the tuning database (runtime/tuning/TuningDatabase.h) as a query API:
// its records and stored sweeps as rows, lookup by key, prune.
#include "PythonErrors.h"
#include "SweepRows.h"

#include "compiler/tuner/SweepExport.h"
#include "runtime/tuning/TuningDatabase.h"
#include "support/Version.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

py::dict recordRow(const tuning::TuningRecord &record) {
  py::dict row;
  row["signature"] = record.key.signature;
  row["shapes"] = record.key.shapes;
  row["target"] = record.key.target;
  row["kiln_version"] = record.key.kilnVersion;
  row["schedule"] = record.schedule;
  row["backend"] = record.backend;
  row["best_s"] = record.bestSeconds;
  row["default_s"] = record.defaultSeconds;
  row["candidates_timed"] = record.candidatesTimed;
  row["summary"] = record.summary;
  row["tuned_at"] = record.tunedAt;
  return row;
}

} // namespace

void bindTuningDatabase(py::module_ &module) {
  py::class_<tuning::TuningDatabase>(module, "_TuningDatabase")
      .def(py::init([](const std::string &path, bool create) {
             return valueOrThrow(tuning::TuningDatabase::open(path, create));
           }),
           py::arg("path"), py::arg("create"))
      .def_static("default_path", &tuning::TuningDatabase::defaultPath)
      .def_property_readonly("path", &tuning::TuningDatabase::path)
      .def("records",
           [](const tuning::TuningDatabase &db) {
             py::list rows;
             for (const tuning::TuningRecord &record : valueOrThrow(db.list()))
               rows.append(recordRow(record));
             return rows;
           })
      .def(
          "find",
          [](const tuning::TuningDatabase &db, const std::string &signature,
             const std::string &shapes, const std::string &target,
             const std::string &kilnVersion) -> py::object {
            auto record = valueOrThrow(db.find({signature, shapes, target, kilnVersion}));
            return record ? py::object(recordRow(*record)) : py::none();
          },
          py::arg("signature"), py::arg("shapes"), py::arg("target"), py::arg("kiln_version"))
      .def("sweeps",
           [](const tuning::TuningDatabase &db) {
             py::list sweeps;
             for (const auto &info : valueOrThrow(db.sweeps())) {
               py::dict entry;
               entry["id"] = info.id;
               entry["label"] = info.label;
               entry["created_at"] = info.createdAt;
               entry["groups"] = info.groups;
               sweeps.append(std::move(entry));
             }
             return sweeps;
           })
      .def(
          "sweep",
          [](const tuning::TuningDatabase &db, int64_t id) {
            py::list rows;
            std::vector<tuning::SweepGroup> groups = valueOrThrow(db.sweep(id));
            for (size_t g = 0; g < groups.size(); ++g) {
              int winner = tuning::sweepWinner(groups[g]);
              for (size_t i = 0; i < groups[g].candidates.size(); ++i)
                rows.append(sweepRow(groups[g], i, int(g), int(i) == winner));
            }
            return rows;
          },
          py::arg("id"))
      .def(
          "prune",
          [](tuning::TuningDatabase &db, bool otherVersions, std::optional<double> olderThanDays,
             std::optional<std::string> matching) {
            tuning::TuningDatabase::PruneFilter filter;
            if (otherVersions)
              filter.otherVersionsThan = std::string(kilnVersion());
            filter.olderThanDays = olderThanDays;
            filter.matching = std::move(matching);
            return valueOrThrow(db.prune(filter));
          },
          py::arg("other_versions"), py::arg("older_than_days"), py::arg("matching"));
}

} // namespace kiln::python
