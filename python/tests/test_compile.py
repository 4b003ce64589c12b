"""parse_ir and graph.ir(), the compile targets, each stage's text (model.dump) and the
per-kernel profile table."""

import inspect
import re

import numpy as np
import pytest

import kiln
from conftest import assert_close


def _mlp(seed=2):
    graph = kiln.Graph("mlp", seed=seed)
    x = graph.input("x", [5, 12])
    hidden = kiln.nn.Dense(16, activation="relu", name="hidden")(graph, x)
    graph.output("y", kiln.nn.Dense(3, activation="softmax", name="head")(graph, hidden))
    return graph


def test_ir_round_trip_and_parsed_graph_runs(rng):
    graph = _mlp()
    text = graph.ir()
    assert text.startswith("graph @mlp {")
    parsed = kiln.parse_ir(text)
    assert parsed.ir() == text
    x = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
    expected = kiln.evaluate(graph, x=x)["y"]
    # A parsed graph has no parameter values: they are passed by name, like inputs.
    params = graph.param_values()
    assert_close(kiln.evaluate(parsed, x=x, **params)["y"], expected, "f32")
    model = kiln.compile(parsed, target="cpu")
    assert_close(model(x=x, **params)["y"], expected, "f32")
    with pytest.raises(kiln.Error, match="parsed from IR text cannot be extended"):
        parsed.input("z", [1])


@pytest.mark.parametrize("target", ["cpu", "sim"])
def test_targets_match_the_reference(target, rng):
    graph = _mlp()
    x = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
    model = kiln.compile(graph, target=target)
    assert model.target.startswith(target)
    assert model.input_names == ["x"] and model.output_names == ["y"]
    assert_close(model(x=x)["y"], kiln.evaluate(graph, x=x)["y"], "f32")


def test_auto_target_runs_on_the_gpu_when_usable_else_on_the_cpu_saying_why(rng):
    graph = _mlp()
    try:
        kiln.compile(graph, target="cuda")
        gpu_usable = True
    except kiln.Error:
        gpu_usable = False
    model = kiln.compile(graph, target="auto")
    if gpu_usable:
        assert model.device == "cuda:0" and model.report["fallback_reason"] == ""
    else:
        assert model.device == "cpu" and model.target.startswith("cpu")
        assert model.report["fallback_reason"].startswith("no usable GPU (")
        assert model.report["fallback_reason"].endswith("running on the CPU")
    x = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
    assert_close(model(x=x)["y"], kiln.evaluate(graph, x=x)["y"], "f32")


def test_dump_gives_every_stage_naming_the_kernels():
    model = kiln.compile(_mlp(), target="cpu")
    kernels = [row["name"] for row in model.profile(x=np.ones((5, 12), np.float32))]
    assert len(kernels) == model.num_kernels > 0
    graph_text = model.dump("graph")
    assert "// ---- graph after graph passes" in graph_text and "matmul" in graph_text
    assert "// ---- fusion groups" in model.dump("fused")
    kernel_text = model.dump("kernel")
    llvm_text = model.dump("llvm")
    for name in kernels:
        assert f"// ---- kernel {name}" in kernel_text
        assert f"// ---- LLVM IR of {name}" in llvm_text
    assert "define" in llvm_text
    with pytest.raises(kiln.Error, match="ptx and cuda dumps show GPU code"):
        model.dump("ptx")
    with pytest.raises(kiln.Error, match="unknown stage 'sass'"):
        model.dump("sass")


def test_gpu_stages_of_a_simulated_model():
    model = kiln.compile(_mlp(), target="sim")
    kernel_names = re.findall(r"// ---- kernel (\S+)", model.dump("kernel"))
    assert len(kernel_names) == model.num_kernels
    ptx = model.dump("ptx")
    cuda = model.dump("cuda")
    for name in kernel_names:
        assert f".entry {name}" in ptx
        assert name in cuda
    assert "__global__" in cuda


def test_precision_policy_shows_in_the_graph_stage(rng):
    graph = _mlp()
    model = kiln.compile(graph, target="cpu", precision="bf16-mixed")
    assert "bf16" in model.dump("graph")
    x = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
    assert_close(model(x=x)["y"], kiln.evaluate(graph, x=x)["y"], "bf16")


def test_profile_rows():
    model = kiln.compile(_mlp(), target="cpu")
    rows = model.profile(runs=3, x=np.ones((5, 12), np.float32))
    assert len(rows) == model.num_kernels
    for row in rows:
        assert row["calls"] == 3
        assert row["total_ms"] >= row["mean_ms"] >= 0
        assert row["flops_per_call"] >= 0 and row["bytes_per_call"] > 0
    assert [r["total_ms"] for r in rows] == sorted((r["total_ms"] for r in rows), reverse=True)
    # Compiled: every run's kernels and the preludes that pack each weight once.
    assert model.report["num_kernels"] == model.num_kernels + model.report["num_prelude_kernels"]
    assert model.report["num_prelude_kernels"] == 2  # the two dense weights


def test_profile_without_inputs_reuses_the_last_run():
    model = kiln.compile(_mlp(), target="cpu")
    with pytest.raises(kiln.Error, match="profile\\(\\) needs the model's inputs") as caught:
        model.profile()
    # Raised by the package's Python part, and located at the call like the C++ errors.
    assert caught.value.code == "invalid argument"
    assert (caught.value.file, caught.value.line) == (__file__, inspect.currentframe().f_lineno - 3)
    model(x=np.ones((5, 12), np.float32))
    assert [row["calls"] for row in model.profile(runs=2)] == [2] * model.num_kernels
