"""Research hooks over kiln's schedules (docs/python.md, "Schedules, tuning and sweeps"): a
model's fusion groups and their schedule spaces, the autotuner and sweeps as records, the
sweep plot, and the tuning database as a query API. Each calls kiln's own C++ (the
compiler's lowering, compiler/tuner, runtime/tuning); nothing here chooses or times."""

import math
import numbers

from . import _kiln


class Group:
    """A fusion group that becomes a kernel, as the fused dump (`group N`) and the tuner name
    it: `id`, `kind`, `summary`, `signature` and `shapes` (the tuning database's key), the
    `target` fingerprint, and `space`, every schedule kiln can lower it with (the default
    first), as schedule text."""

    def __init__(self, entry):
        self.id = entry["id"]
        self.kind = entry["kind"]
        self.summary = entry["summary"]
        self.signature = entry["signature"]
        self.shapes = entry["shapes"]
        self.target = entry["target"]
        self.space = list(entry["space"])

    @property
    def default_schedule(self):
        return self.space[0]

    def __repr__(self):
        return f"<kiln.Group {self.id}: {self.summary} ({len(self.space)} schedules)>"


def _subject(graph, target, precision, backend, gpu_arch):
    """What groups, tune and sweep work on: (graph, target, precision, backend, gpu_arch). A
    kiln.Graph as given, on target "cpu" unless named. A compiled model (kiln.compile's) is
    its graph as it was compiled, on the machine it runs on ("cpu", "sim" or "cuda": where
    its "auto" went), with its precision, backend and GPU architecture unless named."""
    compiled = getattr(graph, "_compiled", None)
    if compiled is None:
        return graph, target or "cpu", precision or "fp32", backend or "llvm", gpu_arch or ""
    options = graph._options
    return (_kiln.parse_ir(compiled.graph_text), target or compiled.target.split()[0],
            precision or options["precision"], backend or options["backend"],
            gpu_arch or options["gpu_arch"])


def groups(graph, target=None, precision=None, backend=None, gpu_arch=None):
    """The fusion groups of `graph` (a Graph, or a compiled model: see tune) that become
    kernels when compiled with these options, in launch order (a list of Group)."""
    return [Group(entry)
            for entry in _kiln._groups(*_subject(graph, target, precision, backend, gpu_arch))]


def schedule_space(group):
    """Every schedule `group` (a Group of kiln.groups) can be lowered with, the heuristic
    default first, as the text kiln.compile's `schedules` takes."""
    return list(group.space)


def group_id(group):
    """A Group's id, or the int given."""
    return group.id if isinstance(group, Group) else int(group)


def _records(rows, frame):
    """Rows as a pandas DataFrame when pandas is installed (or frame=True), else the list."""
    if frame is False:
        return rows
    try:
        import pandas
    except ImportError:
        if frame:
            raise
        return rows
    return pandas.DataFrame(rows)


def _rows(records):
    """The list of dicts behind records (a list, or a DataFrame of kiln.sweep's)."""
    if hasattr(records, "to_dict"):
        return records.to_dict("records")
    return list(records)


def _limit(value, name, whole, caller):
    """A tuner limit: None is 0 (none); else a positive finite number (a whole one when
    `whole`). Anything else is a kiln.Error naming `caller`'s keyword and the value."""
    if value is None:
        return 0
    usable = (isinstance(value, numbers.Real) and not isinstance(value, bool)
              and math.isfinite(value) and value > 0 and (not whole or value == int(value)))
    if not usable:
        expected = "a positive whole number" if whole else "a positive number of seconds"
        raise _kiln._error(f"kiln.{caller}: {name} must be {expected} or None, got {value!r}")
    return int(value) if whole else float(value)


def _run_tuner(graph, group, exhaustive, budget, trials, target, precision, backend, gpu_arch,
               runs, seed, db, label, frame):
    caller = "sweep" if exhaustive else "tune"
    result = _kiln._tune(*_subject(graph, target, precision, backend, gpu_arch),
                         -1 if group is None else group_id(group), exhaustive,
                         _limit(budget, "budget", False, caller),
                         _limit(trials, "trials", True, caller),
                         _limit(runs, "runs", True, caller), int(seed), db or "", label)
    return _records(result["rows"], frame)


def tune(graph, budget=None, trials=None, target=None, precision=None, backend=None,
         gpu_arch=None, group=None, runs=None, seed=1, db=None, frame=None):
    """Runs kiln's autotuner on every group of `graph` (or only `group`) for `budget` seconds
    and/or `trials` candidates; returns one record per timed candidate: group, summary,
    kind, signature, shapes, target, kiln_version, candidate, space_index, space_size,
    schedule, backend, median_s, min_s, runs, valid, note, default, winner. With `db` (a
    path), the winners are stored there as tuning records, as `kiln tune --db` stores them.
    `graph` is a Graph (target "cpu" unless named) or a compiled model: its graph as
    compiled, on the machine it runs on, with its precision, backend and GPU architecture
    unless named (the model itself is unchanged: compile again to use stored records)."""
    return _run_tuner(graph, group, False, budget, trials, target, precision, backend, gpu_arch,
                      runs, seed, db, "", frame)


def sweep(graph, group=None, target=None, precision=None, backend=None, gpu_arch=None,
          runs=None, seed=1, db=None, label="python sweep", frame=None):
    """Times every schedule of every group of `graph` (a Graph or a compiled model, as
    kiln.tune takes) or only `group` (a Group or its id), as `kiln tune --sweep` does;
    returns one record per candidate (as kiln.tune). With `db`, the winners and the whole
    sweep (under `label`) are stored there."""
    return _run_tuner(graph, group, True, None, None, target, precision, backend, gpu_arch,
                      runs, seed, db, label, frame)


def sweep_svg(records, sort_by="time"):
    """The SVG plot `kiln tune --sweep --svg` draws, of a sweep's records: per group the
    median time (log axis) of each candidate, sorted by time or by a schedule field."""
    return _kiln._sweep_svg(_rows(records), sort_by)


def sweep_table(records):
    """The records as a plain-text table: group, candidate, median, flags, schedule."""
    lines = [f"{'group':>5} {'cand':>4} {'median':>12}  {'':7} schedule"]
    for row in _rows(records):
        flags = ("default " if row["default"] else "") + ("winner" if row["winner"] else "")
        median = f"{row['median_s'] * 1e6:.2f} us" if row["valid"] else "invalid"
        lines.append(f"{row['group']:>5} {row['candidate']:>4} {median:>12}  {flags:7} "
                     f"{row['schedule']}")
    return "\n".join(lines)


def plot_sweep(records, sort_by="time", path=None):
    """Plots a sweep as `kiln tune --sweep` does: one panel per group, the candidates'
    median times on a log axis, sorted by time or by the schedule field `sort_by`, the
    default ringed, the winner starred, invalid candidates as red squares on the top edge.
    With matplotlib installed returns the figure (saved to `path` if given); without it,
    prints the table (kiln.sweep_table) and writes kiln's own SVG to `path` if given."""
    rows = _rows(records)
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print(sweep_table(rows))
        if path:
            with open(path, "w") as file:
                file.write(sweep_svg(rows, sort_by))
        return None
    panels = {}
    for row in rows:
        panels.setdefault(row["group"], []).append(row)
    figure, axes = plt.subplots(len(panels), 1, figsize=(8, 3 * len(panels)), squeeze=False)
    for axis, (number, candidates) in zip(axes[:, 0], panels.items()):
        def order(row):
            fields = dict(w.split("=", 1) for w in row["schedule"].split() if "=" in w)
            value = fields.get(sort_by, "")
            return (float(value) if value.lstrip("-").isdigit() else 0, row["median_s"])
        ordered = sorted(candidates, key=order)
        valid = [(i, r) for i, r in enumerate(ordered) if r["valid"]]
        top = max((r["median_s"] for _, r in valid), default=1) * 2
        axis.set_yscale("log")
        axis.plot([i for i, _ in valid], [r["median_s"] for _, r in valid], "o", ms=4)
        for i, r in enumerate(ordered):
            if not r["valid"]:
                axis.plot(i, top, "s", color="red")
            if r["default"]:
                axis.plot(i, r["median_s"], "o", mfc="none", mec="black", ms=10)
            if r["winner"]:
                axis.plot(i, r["median_s"], "*", color="gold", mec="black", ms=14)
        axis.set_title(f"group {number}: {candidates[0]['summary']}")
        axis.set_xlabel(f"candidates sorted by {sort_by}")
        axis.set_ylabel("median time (s)")
    figure.tight_layout()
    if path:
        figure.savefig(path)
    return figure


class TuningDatabase:
    """The tuning database (docs/tuning.md) as a query API. `path` None: kiln's default
    ($KILN_TUNING_DB, else tuning.sqlite in the kernel cache's root). `create` makes a
    missing file a new database; otherwise a missing one is a kiln.Error."""

    def __init__(self, path=None, create=False, frame=None):
        self._db = _kiln._TuningDatabase(path or _kiln._TuningDatabase.default_path(), create)
        self._frame = frame

    @property
    def path(self):
        return self._db.path

    def records(self, match=None, target=None, kiln_version=None):
        """The stored tuning records (signature, shapes, target, kiln_version, schedule,
        backend, best_s, default_s, candidates_timed, summary, tuned_at), those whose
        signature or summary contains `match`, whose target contains `target`, of that kiln
        version, when given."""
        rows = [r for r in self._db.records()
                if (match is None or match in r["signature"] or match in r["summary"])
                and (target is None or target in r["target"])
                and (kiln_version is None or r["kiln_version"] == kiln_version)]
        return _records(rows, self._frame)

    def find(self, signature, shapes, target, kiln_version=None):
        """The record with that key (this kiln's version by default), or None."""
        return self._db.find(signature, shapes, target, kiln_version or _kiln.__version__)

    def record_for(self, group):
        """The record a compile would use for `group` (a kiln.Group), or None."""
        return self.find(group.signature, group.shapes, group.target)

    def sweeps(self):
        """The stored sweeps: id, label, created_at, groups."""
        return self._db.sweeps()

    def sweep(self, id):
        """A stored sweep's candidates as records (as kiln.sweep returns them)."""
        return _records(self._db.sweep(id), self._frame)

    def prune(self, other_versions=False, older_than_days=None, match=None):
        """Removes the records matching every filter given; returns how many."""
        return self._db.prune(other_versions, older_than_days, match)

    def __len__(self):
        return len(self._db.records())
