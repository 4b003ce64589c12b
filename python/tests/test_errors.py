"""kiln's errors in Python: a kiln.Error with the message, the error code, and for a DSL call
the Python file and line that made it (through kiln.nn's Python layers too), kept as the
graph's error for compile and evaluate."""

import inspect
import os

import numpy as np
import pytest

import kiln


def _next_line():
    return inspect.currentframe().f_back.f_lineno + 1


def test_op_error_names_the_python_line():
    graph = kiln.Graph("bad")
    a = graph.input("a", [2, 3])
    b = graph.input("b", [4, 5])
    line = _next_line()
    with pytest.raises(kiln.Error) as caught:
        kiln.add(a, b)
    # The call is on the line after `with`.
    error = caught.value
    assert error.file == __file__
    assert error.line == line + 1
    assert error.code == "shape mismatch"
    assert str(error).startswith(f"{__file__}:{line + 1}: add: cannot broadcast f32[2,3] and f32[4,5]")


def test_operator_error_names_the_python_line():
    graph = kiln.Graph("bad")
    a = graph.input("a", [2, 3])
    b = graph.input("b", [2, 3])
    with pytest.raises(kiln.Error) as caught:
        a @ b  # noqa: B018
    assert caught.value.line == inspect.currentframe().f_lineno - 1
    assert "matmul" in str(caught.value)


def test_layer_error_through_python_sequential_names_the_callers_line():
    graph = kiln.Graph("bad")
    x = graph.input("x", [2, 3, 8, 8])
    model = kiln.nn.Sequential(kiln.nn.Flatten(), kiln.nn.Conv2D(4, 3))
    line = _next_line()
    with pytest.raises(kiln.Error) as caught:
        model(graph, x)
    assert caught.value.file == __file__
    assert caught.value.line == line + 1
    assert "conv2d" in str(caught.value)


def test_compile_and_evaluate_report_the_located_error_after_it_was_caught():
    graph = kiln.Graph("bad")
    x = graph.input("x", [2, 3])
    with pytest.raises(kiln.Error):
        kiln.reshape(x, [4, 4])
    line = inspect.currentframe().f_lineno - 1
    graph.output("y", kiln.relu(x))
    for call in (lambda: kiln.compile(graph, target="cpu"), lambda: kiln.evaluate(graph, x=np.ones((2, 3), np.float32))):
        with pytest.raises(kiln.Error) as caught:
            call()
        assert caught.value.file == __file__ and caught.value.line == line
        assert "reshape" in str(caught.value)


def test_errors_of_a_call_without_a_place_of_their_own_name_the_calling_line():
    graph = kiln.Graph("located")
    graph.output("y", graph.input("x", [3]) * 2.0)
    line = _next_line()
    with pytest.raises(kiln.Error) as bad_target:
        kiln.compile(graph, target="tpu")
    model = kiln.compile(graph, target="cpu")
    with pytest.raises(kiln.Error) as bad_input:
        model(x=np.ones(3))  # f64 for an f32 input
    assert (bad_target.value.file, bad_target.value.line) == (__file__, line + 1)
    assert str(bad_target.value) == (
        f"{__file__}:{line + 1}: unknown target 'tpu': expected cpu, sim, cuda or auto")
    assert (bad_input.value.file, bad_input.value.line) == (__file__, line + 4)
    assert "input 'x' must be f32[3], got f64[3]" in str(bad_input.value)


def test_bad_arguments_are_kiln_errors():
    graph = kiln.Graph("bad")
    x = graph.input("x", [1, 3, 8, 8])
    with pytest.raises(kiln.Error, match="unknown dtype 'f33'"):
        graph.input("y", [2], "f33")
    with pytest.raises(kiln.Error, match="padding 'middle'"):
        kiln.conv2d(x, graph.input("w", [4, 3, 3, 3]), padding="middle")
    with pytest.raises(kiln.Error, match="unknown layout 'chwn'"):
        kiln.max_pool2d(x, layout="chwn")
    with pytest.raises(kiln.Error, match="unknown activation 'swishy'"):
        kiln.nn.Dense(4, activation="swishy")
    graph.output("y", kiln.relu(x))
    with pytest.raises(kiln.Error, match="cpu"):
        kiln.compile(graph, target="tpu")
    with pytest.raises(kiln.Error, match="fp32"):
        kiln.compile(graph, target="cpu", precision="fp7")


def test_graph_without_outputs_is_an_error():
    graph = kiln.Graph("empty")
    graph.input("x", [2])
    with pytest.raises(kiln.Error, match="output"):
        kiln.compile(graph, target="cpu")


def test_parse_error_names_the_ir_line():
    with pytest.raises(kiln.Error) as caught:
        kiln.parse_ir("graph @g {\n  input %x: f32[2]\n  %0: f32[2] = frobnicate(%x)\n}\n")
    assert caught.value.code == "parse error"
    assert caught.value.line == 3
    assert "frobnicate" in str(caught.value)


def test_error_is_an_exception_with_notes():
    assert issubclass(kiln.Error, Exception)
    graph = kiln.Graph("bad")
    with pytest.raises(kiln.Error) as caught:
        kiln.add(graph.input("a", [2]), graph.input("b", [3]))
    assert caught.value.notes == ["add operand types: (f32[2], f32[3])"]
    assert os.path.basename(__file__) in str(caught.value)
