// Sweep candidates as the rows Python sees (kiln.sweep, kiln.tune and a database's stored
// sweeps alike): one dict per candidate, and back again for the sweep plot.
#pragma once

#include "runtime/tuning/TuningRecord.h"

#include <pybind11/pybind11.h>

#include <vector>

namespace kiln::python {

/// Candidate `index` of `group` as {"group", "summary", "signature", "shapes", "target",
/// "kiln_version", "candidate", "schedule", "backend", "median_s", "min_s", "runs",
/// "valid", "note", "default", "winner"}; `groupNumber` is the "group" column.
pybind11::dict sweepRow(const tuning::SweepGroup &group, size_t index, int groupNumber,
                        bool winner);

/// Rows back into sweep groups: consecutive rows with the same "group" form one group, in
/// order (the default first, as the tuner times it). A missing column is a kiln.Error.
std::vector<tuning::SweepGroup> sweepGroupsOf(const pybind11::list &rows);

} // namespace kiln::python
