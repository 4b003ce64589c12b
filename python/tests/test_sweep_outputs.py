"""What a sweep hands back: a pandas DataFrame when pandas is installed (a list of dicts when
it is not, or with frame=False), a matplotlib figure from plot_sweep when matplotlib is
installed (the table and kiln's own SVG when it is not), and a tiny tune and sweep on the
simulator. The tests of an installed module skip, naming it, where it is absent; the tests
of its absence hide it."""

import sys

import pytest

import kiln

RECORD_FIELDS = ["group", "summary", "kind", "signature", "shapes", "target", "kiln_version",
                 "candidate", "space_index", "space_size", "schedule", "backend", "median_s",
                 "min_s", "runs", "valid", "note", "default", "winner"]


def reduction_graph(shape=(24, 40)):
    """One small reduction group (9 candidate schedules on the CPU)."""
    g = kiln.Graph("sweep_outputs", seed=0)
    g.output("z", kiln.reduce_sum(kiln.exp(g.input("x", list(shape))), [1]))
    return g


@pytest.fixture(scope="module")
def sweep_rows():
    return kiln.sweep(reduction_graph(), target="cpu", runs=1, frame=False)


def hide(monkeypatch, *modules):
    """Makes `import module` fail for each of `modules`, as where it is not installed."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_sweep_records_are_a_dataframe_with_pandas(tmp_path):
    pandas = pytest.importorskip("pandas", reason="pandas is not installed (python3-pandas)")
    frame = kiln.sweep(reduction_graph(), target="cpu", runs=1, db=str(tmp_path / "t.sqlite"))
    assert isinstance(frame, pandas.DataFrame)
    assert sorted(frame.columns) == sorted(RECORD_FIELDS)
    assert len(frame) == frame["space_size"].iloc[0] == 9
    assert frame["winner"].sum() == 1 and bool(frame["default"].iloc[0])
    assert frame.loc[frame["winner"], "median_s"].iloc[0] == frame["median_s"].min()
    # Everything that takes records takes the frame.
    assert kiln.sweep_table(frame).count("\n") == len(frame)
    assert kiln.sweep_svg(frame).count('class="candidate"') == len(frame)
    assert isinstance(kiln.tune(reduction_graph(), trials=2, target="cpu", runs=1,
                                frame=True), pandas.DataFrame)
    # The database's record lists follow the same rule.
    db = kiln.TuningDatabase(str(tmp_path / "t.sqlite"))
    assert isinstance(db.records(), pandas.DataFrame) and len(db.records()) == 1
    (stored,) = db.sweeps()
    assert list(db.sweep(stored["id"])["schedule"]) == list(frame["schedule"])


def test_without_pandas_records_are_a_list(monkeypatch, sweep_rows):
    hide(monkeypatch, "pandas")
    records = kiln.tune(reduction_graph(), trials=2, target="cpu", runs=1)
    assert isinstance(records, list) and sorted(records[0]) == sorted(RECORD_FIELDS)
    with pytest.raises(ImportError):
        kiln.tune(reduction_graph(), trials=2, target="cpu", runs=1, frame=True)


def test_plot_sweep_draws_a_matplotlib_figure(tmp_path, sweep_rows):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (python3-matplotlib)")
    path = tmp_path / "sweep.png"
    figure = kiln.plot_sweep(sweep_rows, sort_by="vw", path=str(path))
    (axis,) = figure.axes  # one panel per group
    assert axis.get_yscale() == "log"
    assert axis.get_title().startswith(f"group {sweep_rows[0]['group']}: ")
    assert axis.get_xlabel() == "candidates sorted by vw"
    markers = [line.get_marker() for line in axis.get_lines()]
    assert markers.count("*") == 1  # the winner
    # The valid candidates' times, as plotted, are the records' medians.
    (points,) = [line for line in axis.get_lines() if line.get_marker() == "o"
                 and len(line.get_ydata()) == len(sweep_rows)]
    assert sorted(points.get_ydata()) == sorted(row["median_s"] for row in sweep_rows)
    assert path.read_bytes().startswith(b"\x89PNG")


def test_plot_sweep_without_matplotlib_prints_the_table_and_writes_the_svg(
        monkeypatch, capsys, tmp_path, sweep_rows):
    hide(monkeypatch, "matplotlib", "matplotlib.pyplot")
    path = tmp_path / "sweep.svg"
    assert kiln.plot_sweep(sweep_rows, path=str(path)) is None
    assert capsys.readouterr().out.strip() == kiln.sweep_table(sweep_rows)
    assert path.read_text() == kiln.sweep_svg(sweep_rows)


def test_tune_and_sweep_on_the_simulator():
    # One pointwise group of 15 elements: 12 candidates, each simulated once (a few seconds).
    g = kiln.Graph("sim_sweep", seed=0)
    g.output("y", kiln.exp(g.input("x", [3, 5])))
    (group,) = kiln.groups(g, target="sim")
    assert "driver=sim" in group.target  # the simulator's records are a target of their own
    records = kiln.sweep(g, target="sim", runs=1, frame=False)
    assert sorted(row["schedule"] for row in records) == sorted(group.space)
    assert all(row["target"] == group.target and row["valid"] for row in records)
    assert sum(row["winner"] for row in records) == 1
    tuned = kiln.tune(g, trials=2, target="sim", runs=1, frame=False)
    assert len(tuned) == 2 and tuned[0]["default"]
