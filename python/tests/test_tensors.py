"""numpy arrays and torch tensors in and out of a compiled model: every dtype both ways,
outputs of the kind the inputs were, and outputs that view kiln's memory without a copy
(checked by address). Inputs read in place or copied: test_input_borrowing.py."""

import numpy as np
import pytest
import torch

import kiln
from kiln import _tensors

DTYPES = ["f64", "f32", "f16", "i64", "i32", "i8", "bool"]
NUMPY = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64,
         "i32": np.int32, "i8": np.int8, "bool": np.bool_}


def _identity_and_max(dtype):
    """A model returning its input and maximum(x, x) (a kernel of that dtype)."""
    graph = kiln.Graph("roundtrip")
    x = graph.input("x", [5, 7], dtype)
    graph.output("same", x)
    graph.output("computed", kiln.logical_or(x, x) if dtype == "bool" else kiln.maximum(x, x))
    return kiln.compile(graph, target="cpu")


def _values(dtype, rng):
    if dtype == "bool":
        return rng.random((5, 7)) < 0.5
    return (rng.uniform(-100, 100, (5, 7))).astype(NUMPY[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip(dtype, rng):
    model = _identity_and_max(dtype)
    value = _values(dtype, rng)
    out = model(x=value)
    for name in ("same", "computed"):
        assert isinstance(out[name], np.ndarray)
        assert out[name].dtype == value.dtype
        np.testing.assert_array_equal(out[name], value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_round_trip(dtype, rng):
    model = _identity_and_max(dtype)
    value = torch.from_numpy(_values(dtype, rng))
    out = model(x=value)
    for name in ("same", "computed"):
        assert isinstance(out[name], torch.Tensor)
        assert out[name].dtype == value.dtype
        assert torch.equal(out[name], value)


def test_torch_bf16_round_trip():
    model = _identity_and_max("bf16")
    value = torch.randn(5, 7, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    out = model(x=value)
    assert out["computed"].dtype == torch.bfloat16
    assert torch.equal(out["computed"], value)


def test_bf16_output_reaches_numpy_as_f32(rng):
    # numpy has no bf16: a numpy caller gets an f32 copy of the bf16 values.
    graph = kiln.Graph("bf16_out")
    graph.output("y", kiln.cast(graph.input("x", [5, 7]), "bf16"))
    model = kiln.compile(graph, target="cpu")
    value = rng.uniform(-3, 3, (5, 7)).astype(np.float32)
    out = model(x=value)["y"]
    assert out.dtype == np.float32
    expected = torch.from_numpy(value).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(out, expected)


def test_torch_non_contiguous_input_is_copied_by_its_strides(rng):
    graph = kiln.Graph("strided")
    graph.output("y", graph.input("x", [7, 5]) * 2.0)
    model = kiln.compile(graph, target="cpu")
    base = torch.from_numpy(rng.uniform(-1, 1, (5, 7)).astype(np.float32))
    transposed = base.t()  # a view with strides (1, 7)
    assert not transposed.is_contiguous()
    assert torch.equal(model(x=transposed)["y"], transposed * 2)


def test_outputs_view_kiln_memory_without_a_copy(rng):
    graph = kiln.Graph("zero_copy")
    graph.output("y", kiln.exp(graph.input("x", [33, 17])))
    model = kiln.compile(graph, target="cpu")
    value = rng.uniform(-1, 1, (33, 17)).astype(np.float32)
    buffers = model._compiled._run({"x": _tensors.to_buffer(value, "x")})
    buffer = buffers["y"]
    array = _tensors.to_numpy(buffer)
    tensor = _tensors.to_torch(buffer)
    assert array.ctypes.data == buffer.address
    assert tensor.data_ptr() == buffer.address
    np.testing.assert_allclose(array, np.exp(value), rtol=2e-6)
    # The public path converts the same way: its arrays own no memory of their own, and
    # are writable (and write through to the torch view of the same buffer).
    out = model(x=value)["y"]
    assert not out.flags.owndata and out.flags.writeable
    array[0, 0] = 7.0
    assert tensor[0, 0].item() == 7.0


def test_param_values_are_numpy_arrays(rng):
    graph = kiln.Graph("params", seed=5)
    weight = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    graph.output("y", graph.input("x", [2, 3]) @ graph.param("w", weight))
    kiln.nn.Dense(6, name="head")(graph, graph.input("h", [2, 4]))
    values = graph.param_values()
    assert set(values) == {"w", "head.weight", "head.bias"}
    np.testing.assert_array_equal(values["w"], weight)
    assert values["head.weight"].shape == (4, 6) and values["head.weight"].dtype == np.float32
    assert np.any(values["head.weight"] != 0)  # Glorot-initialized, not zeros


def test_unsupported_numpy_dtype_is_a_kiln_error():
    graph = kiln.Graph("u16")
    graph.output("y", graph.input("x", [2], "i32") + 1.0)
    model = kiln.compile(graph, target="cpu")
    with pytest.raises(kiln.Error, match="numpy dtype uint16 has no kiln dtype"):
        model(x=np.zeros(2, np.uint16))


def test_mistyped_input_is_a_kiln_error_naming_it():
    graph = kiln.Graph("typed")
    graph.output("y", graph.input("x", [2, 3]) + 1.0)
    model = kiln.compile(graph, target="cpu")
    with pytest.raises(kiln.Error, match="'x'"):
        model(x=np.zeros((3, 2), np.float32))
    with pytest.raises(kiln.Error, match="'z' is neither an input nor a parameter"):
        model(z=np.zeros((2, 3), np.float32))
