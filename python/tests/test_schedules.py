"""The research hooks: fusion groups and their schedule spaces, schedules forced per group,
the tuner and sweeps as records, the sweep plot, and the tuning database's query API."""

import inspect
import time

import numpy as np
import pytest

import kiln


def dense_softmax_graph():
    """One GEMM group (matmul+add+relu) and one row-norm group (softmax), on the CPU."""
    g = kiln.Graph("research", seed=0)
    x = g.input("x", [24, 40])
    h = kiln.nn.Dense(16, activation="relu")(g, x)
    g.output("y", kiln.softmax(h))
    return g


def group_of_kind(graph, kind):
    return next(group for group in kiln.groups(graph, target="cpu") if group.kind == kind)


@pytest.fixture(scope="module")
def x_value():
    return np.random.default_rng(3).standard_normal((24, 40)).astype(np.float32)


def test_groups_are_named_as_in_the_fused_dump():
    g = dense_softmax_graph()
    groups = kiln.groups(g, target="cpu")
    assert [group.kind for group in groups] == ["contraction", "row_norm"]
    fused = kiln.compile(g, target="cpu").dump("fused")
    for group in groups:
        assert f"group {group.id} schedule: {group.default_schedule}" in fused
        assert group.summary and group.signature and group.shapes
        assert group.target.startswith("cpu")


def test_forced_schedule_changes_the_kernel_ir_and_is_named(x_value):
    g = dense_softmax_graph()
    gemm = group_of_kind(g, "contraction")
    space = kiln.schedule_space(gemm)
    forced = next(text for text in space if "pack=b " in text)
    assert forced != space[0]
    default = kiln.compile(g, target="cpu")
    chosen = kiln.compile(g, target="cpu", schedules={gemm: forced})
    kernel = chosen.dump("kernel")
    assert kernel.startswith(f"// group {gemm.id} schedule: {forced} (forced)\n")
    # The kernels themselves differ, not only the header naming the schedule.
    assert kernel.split("\n", 1)[1] != default.dump("kernel")
    # The compiler's own schedule listing (indented, after the fusion plan) shows it.
    assert f"//   group {gemm.id} schedule: {forced}\n" in chosen.dump("fused")
    np.testing.assert_allclose(chosen(x=x_value)["y"], default(x=x_value)["y"],
                               rtol=2e-5, atol=2e-6)


def test_every_schedule_of_a_space_compiles_and_agrees(x_value):
    g = dense_softmax_graph()
    rownorm = group_of_kind(g, "row_norm")
    space = kiln.schedule_space(rownorm)
    assert len(space) > 1 and space[0] == rownorm.default_schedule
    expected = kiln.evaluate(g, x=x_value)["y"]
    for text in space:
        model = kiln.compile(g, target="cpu", schedules={rownorm.id: text})
        assert f"//   group {rownorm.id} schedule: {text}\n" in model.dump("fused")
        np.testing.assert_allclose(model(x=x_value)["y"], expected, rtol=2e-5, atol=2e-6,
                                   err_msg=text)


def test_forced_schedule_errors_name_the_group():
    g = dense_softmax_graph()
    with pytest.raises(kiln.Error, match=r"no group 7 with a kernel \(its kernel groups: 0, 1\)"):
        kiln.compile(g, target="cpu", schedules={7: "rownorm vw=16 par=4096"})
    with pytest.raises(kiln.Error, match=r"schedules\[1\]: schedule 'rownorm vw=16 nope=3'"):
        kiln.compile(g, target="cpu", schedules={1: "rownorm vw=16 nope=3"})
    # A schedule of another kind of kernel is the lowering's error, not a crash.
    with pytest.raises(kiln.Error):
        kiln.compile(g, target="cpu", schedules={1: "reduction vw=16 par=4096"})


def reduction_graph():
    """A graph of one small reduction group: a sweep over it times 9 candidates."""
    g = kiln.Graph("sweep", seed=0)
    g.output("z", kiln.reduce_sum(kiln.exp(g.input("x", [24, 40])), [1]))
    return g


def check_sweep_records(records, space):
    assert [row["candidate"] for row in records] == list(range(len(space)))
    assert sorted(row["schedule"] for row in records) == sorted(space)
    assert records[0]["default"] and records[0]["schedule"] == space[0]
    assert all(row["valid"] and row["median_s"] > 0 and row["runs"] == 2 for row in records)
    winners = [row for row in records if row["winner"]]
    assert len(winners) == 1
    assert winners[0]["median_s"] == min(row["median_s"] for row in records)


def test_sweep_of_one_group_of_a_model(tmp_path):
    g = dense_softmax_graph()
    rownorm = group_of_kind(g, "row_norm")
    records = kiln.sweep(g, group=rownorm, target="cpu", runs=2, frame=False)
    check_sweep_records(records, rownorm.space)
    assert all(row["group"] == rownorm.id and row["summary"] == rownorm.summary
               and row["signature"] == rownorm.signature for row in records)
    svg = kiln.sweep_svg(records)
    assert svg.startswith("<?xml") and svg.count('class="candidate"') == len(records)
    # matplotlib's figure when it is installed, else the table and kiln's own SVG.
    kiln.plot_sweep(records, path=str(tmp_path / "sweep.svg"))
    assert (tmp_path / "sweep.svg").stat().st_size > 0
    assert kiln.sweep_table(records).count("\n") == len(records)


def test_tune_with_a_trial_budget_times_that_many():
    records = kiln.tune(reduction_graph(), trials=3, target="cpu", runs=2, frame=False)
    assert len(records) == 3
    assert records[0]["default"] and sum(row["winner"] for row in records) == 1
    assert all(row["space_size"] == 9 and 0 <= row["space_index"] < 9 for row in records)


def test_tune_of_a_compiled_model_stops_at_its_budget():
    g = dense_softmax_graph()
    model = kiln.compile(g, target="cpu")
    spaces = {group.id: len(group.space) for group in kiln.groups(model)}
    budget = 0.5
    start = time.perf_counter()
    records = kiln.tune(model, budget=budget, runs=1, frame=False)
    elapsed = time.perf_counter() - start
    for group, size in spaces.items():
        mine = [row for row in records if row["group"] == group]
        assert mine and mine[0]["default"] and len(mine) <= size
        assert sum(row["winner"] for row in mine) == 1
    # 25 candidates in all, which take about 3 s here: the budget, not the space, ended it.
    assert len(records) < sum(spaces.values())
    # The budget bounds the search (compiles, checks, timed runs); each group's setup (inputs,
    # the fp64 reference) and the candidates already started when it ran out come on top.
    assert elapsed < budget + 10


@pytest.mark.parametrize("budget", [0, -2.5, float("nan"), float("inf"), "30s", True])
def test_tune_refuses_a_bad_budget_at_the_callers_line(budget):
    model = kiln.compile(reduction_graph(), target="cpu")
    with pytest.raises(kiln.Error) as error:
        line = inspect.currentframe().f_lineno + 1
        kiln.tune(model, budget=budget)
    assert error.value.message == (
        f"kiln.tune: budget must be a positive number of seconds or None, got {budget!r}")
    assert (error.value.file, error.value.line) == (__file__, line)
    assert error.value.code == "invalid argument"


def test_tune_and_sweep_refuse_bad_trials_and_runs():
    g = reduction_graph()
    with pytest.raises(kiln.Error, match=r"kiln.tune: trials must be a positive whole number "
                                         r"or None, got 2.5"):
        kiln.tune(g, trials=2.5)
    with pytest.raises(kiln.Error, match=r"kiln.sweep: runs must be a positive whole number "
                                         r"or None, got 0"):
        kiln.sweep(g, runs=0)


def test_tuning_database_queries(tmp_path, monkeypatch, x_value):
    path = str(tmp_path / "tuning.sqlite")
    with pytest.raises(kiln.Error, match="tuning.sqlite"):
        kiln.TuningDatabase(path)  # missing, and not asked to create it
    g = reduction_graph()
    (group,) = kiln.groups(g, target="cpu")
    records = kiln.sweep(g, target="cpu", runs=2, db=path, label="pytest sweep", frame=False)
    winner = next(row for row in records if row["winner"])

    db = kiln.TuningDatabase(path, frame=False)
    assert len(db) == 1
    (record,) = db.records()
    assert (record["signature"], record["shapes"], record["schedule"]) == (
        group.signature, group.shapes, winner["schedule"])
    assert record["best_s"] == pytest.approx(winner["median_s"])
    assert db.records(match="no such op") == []
    assert db.record_for(group) == record
    assert db.find(group.signature, "1x1", group.target) is None
    (stored,) = db.sweeps()
    assert stored["label"] == "pytest sweep" and stored["groups"] == 1
    assert [row["schedule"] for row in db.sweep(stored["id"])] == [r["schedule"] for r in records]

    # A compile finds the record in the database it is pointed at.
    monkeypatch.setenv("KILN_TUNING_DB", path)
    assert kiln.compile(g, target="cpu").report["tuning"].startswith("1 of 1 groups from")
    assert db.prune(match=group.signature) == 1 and len(db) == 0


def test_tune_takes_a_compiled_model_on_the_machine_it_runs_on(tmp_path, monkeypatch):
    g = reduction_graph()
    simulated = kiln.compile(g, target="sim")
    (group,) = kiln.groups(simulated)  # the model's graph, on its target
    assert "driver=sim" in group.target
    assert group.signature == kiln.groups(g, target="sim")[0].signature
    model = kiln.compile(g, target="cpu")
    path = str(tmp_path / "tuning.sqlite")
    records = kiln.tune(model, trials=2, runs=1, db=path, frame=False)
    assert len(records) == 2 and records[0]["target"].startswith("cpu")
    # The records serve a later compile of the same graph (the model itself is unchanged).
    monkeypatch.setenv("KILN_TUNING_DB", path)
    assert kiln.compile(g, target="cpu").report["tuning"].startswith("1 of 1 groups from")
