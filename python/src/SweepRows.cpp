// Sweep rows (SweepRows.h).
#include "SweepRows.h"

#include "PythonErrors.h"

#include <fmt/format.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

template <typename T> T column(const py::dict &row, const char *name, size_t index) {
  if (!row.contains(name))
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("sweep row {} has no column '{}'", index, name))};
  return row[name].cast<T>();
}

} // namespace

py::dict sweepRow(const tuning::SweepGroup &group, size_t index, int groupNumber, bool winner) {
  const tuning::CandidateTiming &candidate = group.candidates[index];
  py::dict row;
  row["group"] = groupNumber;
  row["summary"] = group.summary;
  row["signature"] = group.key.signature;
  row["shapes"] = group.key.shapes;
  row["target"] = group.key.target;
  row["kiln_version"] = group.key.kilnVersion;
  row["candidate"] = index;
  row["schedule"] = candidate.schedule;
  row["backend"] = candidate.backend;
  row["median_s"] = candidate.medianSeconds;
  row["min_s"] = candidate.minSeconds;
  row["runs"] = candidate.runs;
  row["valid"] = candidate.valid;
  row["note"] = candidate.note;
  row["default"] = index == 0;
  row["winner"] = winner;
  return row;
}

std::vector<tuning::SweepGroup> sweepGroupsOf(const py::list &rows) {
  std::vector<tuning::SweepGroup> groups;
  std::optional<int> current;
  for (size_t i = 0; i < rows.size(); ++i) {
    py::dict row = rows[i].cast<py::dict>();
    int number = column<int>(row, "group", i);
    if (!current || *current != number) {
      current = number;
      tuning::SweepGroup group;
      group.key = {column<std::string>(row, "signature", i), column<std::string>(row, "shapes", i),
                   column<std::string>(row, "target", i),
                   column<std::string>(row, "kiln_version", i)};
      group.summary = column<std::string>(row, "summary", i);
      groups.push_back(std::move(group));
    }
    tuning::CandidateTiming candidate;
    candidate.schedule = column<std::string>(row, "schedule", i);
    candidate.backend = column<std::string>(row, "backend", i);
    candidate.medianSeconds = column<double>(row, "median_s", i);
    candidate.minSeconds = column<double>(row, "min_s", i);
    candidate.runs = column<int>(row, "runs", i);
    candidate.valid = column<bool>(row, "valid", i);
    candidate.note = column<std::string>(row, "note", i);
    groups.back().candidates.push_back(std::move(candidate));
  }
  return groups;
}

} // namespace kiln::python
