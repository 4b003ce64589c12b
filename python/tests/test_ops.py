"""Every op function of kiln's Python DSL, compiled for the CPU against kiln's reference
interpreter, and the interpreter's result against an independent numpy formula (so a
binding wired to the wrong op fails), at an odd and a round size."""

import math

import numpy as np
import pytest

import kiln
from conftest import NUMPY_DTYPES, Inputs, assert_close

SIZES = [7, 16]  # odd (below every vector width) and round

_erf = np.vectorize(math.erf)


def _softplus(x):
    return np.logaddexp(0.0, x)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# name: (kiln function, numpy reference, input range). Inputs are [n, n + 3].
UNARY = {
    "neg": (kiln.neg, np.negative, (-2, 2)),
    "abs": (kiln.abs, np.abs, (-2, 2)),
    "exp": (kiln.exp, np.exp, (-2, 2)),
    "log": (kiln.log, np.log, (0.1, 3)),
    "sqrt": (kiln.sqrt, np.sqrt, (0.1, 3)),
    "rsqrt": (kiln.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 3)),
    "tanh": (kiln.tanh, np.tanh, (-2, 2)),
    "sigmoid": (kiln.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-4, 4)),
    "relu": (kiln.relu, lambda x: np.maximum(x, 0), (-2, 2)),
    "silu": (kiln.silu, lambda x: x / (1 + np.exp(-x)), (-4, 4)),
    "erf": (kiln.erf, _erf, (-2, 2)),
    "sin": (kiln.sin, np.sin, (-3, 3)),
    "cos": (kiln.cos, np.cos, (-3, 3)),
    "relu6": (kiln.relu6, lambda x: np.clip(x, 0, 6), (-3, 9)),
    "hard_swish": (kiln.hard_swish, lambda x: x * np.clip(x / 6 + 0.5, 0, 1), (-5, 5)),
    "mish": (kiln.mish, lambda x: x * np.tanh(_softplus(x)), (-4, 4)),
    "gelu": (kiln.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), (-3, 3)),
    "gelu_tanh": (
        lambda x: kiln.gelu(x, approximate="tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        (-3, 3),
    ),
    "hard_sigmoid": (
        lambda x: kiln.hard_sigmoid(x, alpha=0.2, beta=0.4),
        lambda x: np.clip(0.2 * x + 0.4, 0, 1),
        (-4, 4),
    ),
    "softplus": (lambda x: kiln.softplus(x, beta=2.0), lambda x: _softplus(2 * x) / 2, (-4, 4)),
    "leaky_relu": (lambda x: kiln.leaky_relu(x, slope=0.2), lambda x: np.where(x >= 0, x, 0.2 * x), (-2, 2)),
    "elu": (lambda x: kiln.elu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), (-2, 2)),
    "clamp": (lambda x: kiln.clamp(x, -0.5, 0.75), lambda x: np.clip(x, -0.5, 0.75), (-2, 2)),
    "softmax": (lambda x: kiln.softmax(x, axis=-1), _softmax, (-3, 3)),
    "softmax_axis0": (lambda x: kiln.softmax(x, axis=0), lambda x: _softmax(x, 0), (-3, 3)),
    "log_softmax": (kiln.log_softmax, lambda x: np.log(_softmax(x)), (-3, 3)),
    "scalar_ops": (lambda x: 2.0 - x * 3.0 / 4.0 + 1.0, lambda x: 2.0 - x * 3.0 / 4.0 + 1.0, (-2, 2)),
    "neg_operator": (lambda x: -x, np.negative, (-2, 2)),
    "pow_scalar": (lambda x: kiln.pow(x, 3.0), lambda x: x**3, (-2, 2)),
    "maximum_scalar": (lambda x: kiln.maximum(x, 0.25), lambda x: np.maximum(x, 0.25), (-2, 2)),
    "minimum_scalar": (lambda x: kiln.minimum(x, 0.25), lambda x: np.minimum(x, 0.25), (-2, 2)),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, n, rng):
    op, reference, (low, high) = UNARY[name]
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    graph.output("out", op(inputs("x", [n, n + 3], low=low, high=high)))
    got, ref = _compile_and_check(graph, inputs.values, "f32")
    assert_close(ref["out"], reference(inputs.values["x"].astype(np.float64)), "f32", "vs numpy")


# name: (kiln function of (a, b), numpy reference, b's range, output dtype). a is [n, n + 3]
# in [-2, 2]; b is [n + 3], broadcast along a's rows.
BINARY = {
    "add": (kiln.add, np.add, (-2, 2), "f32"),
    "sub": (kiln.sub, np.subtract, (-2, 2), "f32"),
    "mul": (kiln.mul, np.multiply, (-2, 2), "f32"),
    "div": (kiln.div, np.divide, (0.5, 2), "f32"),
    "pow": (lambda a, b: kiln.pow(kiln.abs(a) + 0.5, b), lambda a, b: (np.abs(a) + 0.5) ** b, (-2, 2), "f32"),
    "maximum": (kiln.maximum, np.maximum, (-2, 2), "f32"),
    "minimum": (kiln.minimum, np.minimum, (-2, 2), "f32"),
    "operators": (lambda a, b: (a + b) * a - b / 3.0, lambda a, b: (a + b) * a - b / 3.0, (-2, 2), "f32"),
    "eq": (lambda a, b: kiln.eq(kiln.relu(a), kiln.relu(b)), lambda a, b: np.maximum(a, 0) == np.maximum(b, 0), (-2, 2), "bool"),
    "ne": (lambda a, b: kiln.ne(kiln.relu(a), kiln.relu(b)), lambda a, b: np.maximum(a, 0) != np.maximum(b, 0), (-2, 2), "bool"),
    "eq_scalar": (lambda a, b: kiln.eq(kiln.relu(a + b), 0.0), lambda a, b: np.maximum(a + b, 0) == 0, (-2, 2), "bool"),
    "ne_scalar": (lambda a, b: kiln.ne(kiln.relu(a + b), 0.0), lambda a, b: np.maximum(a + b, 0) != 0, (-2, 2), "bool"),
    "lt": (kiln.lt, np.less, (-2, 2), "bool"),
    "le": (kiln.le, np.less_equal, (-2, 2), "bool"),
    "gt": (kiln.gt, np.greater, (-2, 2), "bool"),
    "ge": (kiln.ge, np.greater_equal, (-2, 2), "bool"),
    "lt_operator": (lambda a, b: a < b, np.less, (-2, 2), "bool"),
    "ge_scalar_operator": (lambda a, b: (a + b) >= 0.5, lambda a, b: (a + b) >= 0.5, (-2, 2), "bool"),
    "logical_and": (lambda a, b: kiln.logical_and(a > 0.0, b > 0.0), lambda a, b: (a > 0) & (b > 0), (-2, 2), "bool"),
    "logical_or": (lambda a, b: kiln.logical_or(a > 0.0, b > 0.0), lambda a, b: (a > 0) | (b > 0), (-2, 2), "bool"),
    "logical_not": (lambda a, b: kiln.logical_not(a > b), lambda a, b: ~(a > b), (-2, 2), "bool"),
    "where": (lambda a, b: kiln.where(a > b, a, b * 2.0), lambda a, b: np.where(a > b, a, b * 2), (-2, 2), "f32"),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, n, rng):
    op, reference, (low, high), dtype = BINARY[name]
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    a = inputs("a", [n, n + 3])
    b = inputs("b", [n + 3], low=low, high=high)
    graph.output("out", op(a, b))
    got, ref = _compile_and_check(graph, inputs.values, dtype)
    expected = reference(inputs.values["a"].astype(np.float64), inputs.values["b"].astype(np.float64))
    assert_close(ref["out"], expected, dtype, "vs numpy")


REDUCTIONS = {
    "reduce_sum": np.sum,
    "reduce_mean": np.mean,
    "reduce_max": np.max,
    "reduce_min": np.min,
    "reduce_prod": np.prod,
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("axes", [[1], [0, 2]])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, axes, n, rng):
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    x = inputs("x", [3, n, 5], low=0.5, high=1.5)
    graph.output("out", getattr(kiln, name)(x, axes, keepdims=len(axes) == 1))
    got, ref = _compile_and_check(graph, inputs.values, "f32")
    expected = REDUCTIONS[name](inputs.values["x"].astype(np.float64), axis=tuple(axes), keepdims=len(axes) == 1)
    assert_close(ref["out"], expected, "f32", "vs numpy")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction(name, n, rng):
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    graph.output("out", getattr(kiln, name)(inputs("x", [n, 9]), axis=1))
    got, ref = _compile_and_check(graph, inputs.values, "i64")
    assert_close(ref["out"], getattr(np, name)(inputs.values["x"], axis=1), "i64", "vs numpy")


def _compile_and_check(graph, values, dtype):
    from conftest import compile_and_compare

    return compile_and_compare(graph, values, dtype)


# Ops with shapes of their own: name -> build(graph, inputs, n) returning the output, and
# a numpy reference of the input values and n (test_window_ops checks the windowed ops
# against torch).
def _matmul(g, inp, n):
    return kiln.matmul(inp("a", [2, n, 5]), inp("b", [n + 1, 5]), transpose_b=True)


def _matmul_operator(g, inp, n):
    return inp("a", [n, 6]) @ inp("b", [6, n + 2])


def _reshape(g, inp, n):
    return kiln.reshape(inp("x", [n, 4, 3]), [-1, 6])


def _flatten(g, inp, n):
    return kiln.flatten(inp("x", [2, n, 3, 2]), start_axis=2)


def _transpose(g, inp, n):
    return kiln.transpose(inp("x", [n, 3, 5]), [2, 0, 1])


def _broadcast_to(g, inp, n):
    return kiln.broadcast_to(inp("x", [1, 5]), [n, 5])


def _slice(g, inp, n):
    return kiln.slice(inp("x", [n, 9]), [1, 0], [n, 9], [2, 3])


def _slice_axis(g, inp, n):
    return kiln.slice_axis(inp("x", [n, 9]), axis=1, start=2, stop=8, step=2)


def _concat(g, inp, n):
    return kiln.concat([inp("a", [n, 2]), inp("b", [n, 5])], axis=1)


def _pad(g, inp, n):
    return kiln.pad(inp("x", [n, 3]), [1, 0], [2, 3], value=0.5)


def _gather(g, inp, n):
    return kiln.gather(inp("data", [n, 4]), inp("indices", [3, 2], "i64", 0, n), axis=0)


def _take_along_axis(g, inp, n):
    return kiln.take_along_axis(inp("data", [n, 4]), inp("indices", [n, 6], "i64", 0, 4), axis=1)


def _squeeze(g, inp, n):
    return kiln.squeeze(inp("x", [n, 1, 3]), [1])


def _unsqueeze(g, inp, n):
    return kiln.unsqueeze(inp("x", [n, 3]), [0, 2])


def _iota(g, inp, n):
    return kiln.cast(kiln.iota(g, [n, 3], axis=0), "f32") + inp("x", [n, 3])


def _constant(g, inp, n):
    table = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
    return inp("x", [n, 3]) * kiln.constant(g, table) + kiln.constant(g, 0.5, shape=[3])


def _scalar_like(g, inp, n):
    x = inp("x", [n, 3])
    return x * kiln.scalar_like(x, 3.0)


def _cast(g, inp, n):
    return kiln.cast(inp("x", [n, 3], low=-50, high=50), "i32")


def _cast_f16(g, inp, n):
    return kiln.cast(kiln.cast(inp("x", [n, 3]), "f16"), "f32")


SHAPED = {
    "matmul": (_matmul, lambda v, n: v["a"] @ v["b"].T, "f32"),
    "matmul_operator": (_matmul_operator, lambda v, n: v["a"] @ v["b"], "f32"),
    "reshape": (_reshape, lambda v, n: v["x"].reshape(-1, 6), "f32"),
    "flatten": (_flatten, lambda v, n: v["x"].reshape(2, -1, 6), "f32"),
    "transpose": (_transpose, lambda v, n: v["x"].transpose(2, 0, 1), "f32"),
    "broadcast_to": (_broadcast_to, lambda v, n: np.broadcast_to(v["x"], (n, 5)), "f32"),
    "slice": (_slice, lambda v, n: v["x"][1::2, 0::3], "f32"),
    "slice_axis": (_slice_axis, lambda v, n: v["x"][:, 2:8:2], "f32"),
    "concat": (_concat, lambda v, n: np.concatenate([v["a"], v["b"]], axis=1), "f32"),
    "pad": (_pad, lambda v, n: np.pad(v["x"], [(1, 2), (0, 3)], constant_values=0.5), "f32"),
    "gather": (_gather, lambda v, n: v["data"][v["indices"]], "f32"),
    "take_along_axis": (_take_along_axis, lambda v, n: np.take_along_axis(v["data"], v["indices"], 1), "f32"),
    "squeeze": (_squeeze, lambda v, n: v["x"][:, 0, :], "f32"),
    "unsqueeze": (_unsqueeze, lambda v, n: v["x"][None, :, None, :], "f32"),
    "iota": (_iota, lambda v, n: np.arange(len(v["x"]))[:, None] + v["x"], "f32"),
    "constant": (
        _constant,
        lambda v, n: v["x"] * np.linspace(-1, 1, v["x"].size, dtype=np.float32).reshape(v["x"].shape) + 0.5,
        "f32",
    ),
    "scalar_like": (_scalar_like, lambda v, n: v["x"] * 3, "f32"),
    "cast_i32": (_cast, lambda v, n: np.trunc(v["x"]).astype(np.int32), "i32"),
    "cast_f16": (_cast_f16, lambda v, n: v["x"].astype(np.float16).astype(np.float32), "f32"),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(SHAPED))
def test_shaped(name, n, rng):
    build, reference, dtype = SHAPED[name]
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    graph.output("out", build(graph, inputs, n))
    got, ref = _compile_and_check(graph, inputs.values, dtype)
    values = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inputs.values.items()}
    expected = reference(values, n)
    assert_close(ref["out"], expected, dtype, "vs numpy")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16", "i64", "i32", "i8"])
def test_elementwise_and_reduction_in_every_dtype(dtype, n, rng):
    """The same ops in each storage dtype (bf16 inputs come as torch tensors: numpy has no
    bf16), compiled against the reference with that dtype's tolerance."""
    import torch

    graph = kiln.Graph(f"dtype_{dtype}")
    a = graph.input("a", [n, 5], dtype)
    b = graph.input("b", [5], dtype)
    graph.output("sum", a + b)
    graph.output("product", kiln.mul(a, b))
    graph.output("max", kiln.maximum(a, b))
    graph.output("row_sum", kiln.reduce_sum(a, [1]))
    if dtype.startswith("f") or dtype == "bf16":
        graph.output("tanh", kiln.tanh(a))
    values = {"a": rng.uniform(-3, 3, (n, 5)), "b": rng.uniform(-3, 3, (5,))}
    if dtype == "bf16":
        values = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in values.items()}
    elif dtype.startswith("i"):
        values = {k: np.round(v).astype(NUMPY_DTYPES[dtype]) for k, v in values.items()}
    else:
        values = {k: v.astype(NUMPY_DTYPES[dtype]) for k, v in values.items()}
    got = kiln.compile(graph, target="cpu")(**values)
    reference = kiln.evaluate(graph, **values)
    for name in reference:
        if dtype == "bf16":
            assert got[name].dtype == torch.bfloat16
            got_value, ref_value = got[name].float().numpy(), reference[name].float().numpy()
        else:
            got_value, ref_value = got[name], reference[name]
            assert got_value.dtype == NUMPY_DTYPES[dtype]
        assert_close(got_value, ref_value, dtype, name)
