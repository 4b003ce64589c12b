"""Inputs read in place or copied once: a compiled model borrows the memory of a C-contiguous,
64-byte aligned host array or tensor (checked by address: tests/runtime/CompiledModelTest.cpp
shows a host run hands a borrowed tensor's own address to the kernel), copies the others once
and says why in `last_call_copies`, never writes what it borrows, keeps it alive for
profile(), and returns outputs that never alias an input."""

import gc
import weakref

import numpy as np
import pytest
import torch

import kiln
from kiln import _tensors


def _model(shape=(33, 17), dtype="f32"):
    """y = x * 2 (a kernel reading x) and same = x (an output that is the input itself)."""
    graph = kiln.Graph("borrowing")
    x = graph.input("x", list(shape), dtype)
    graph.output("y", x * 2.0)
    graph.output("same", x)
    return kiln.compile(graph, target="cpu")


def _filled(array, rng):
    array[...] = rng.uniform(-1, 1, array.shape).astype(array.dtype)
    return array


def _run(model, value):
    """Runs `model` on x=value; returns the outputs and the buffer the run read x from."""
    out = model(x=value)
    return out, model._last_inputs["x"]


def test_kiln_zeros_is_aligned_and_read_in_place(rng):
    model = _model()
    x = _filled(kiln.zeros((33, 17)), rng)
    assert x.ctypes.data % 64 == 0 and x.flags.c_contiguous and x.flags.writeable
    out, buffer = _run(model, x)
    assert model.last_call_copies == {}
    assert buffer.borrowed and buffer.address == x.ctypes.data
    np.testing.assert_array_equal(out["y"], x * 2)


def test_unaligned_array_is_copied_once_and_says_why(rng):
    model = _model()
    backing = _filled(kiln.zeros((33 * 17 + 1,)), rng)
    x = backing[1:].reshape(33, 17)  # C-contiguous, 4 bytes past a 64-byte boundary
    assert x.flags.c_contiguous and x.ctypes.data % 64 == 4
    out, buffer = _run(model, x)
    assert "not 64-byte aligned" in model.last_call_copies["x"]
    assert not buffer.borrowed and buffer.address != x.ctypes.data
    np.testing.assert_array_equal(out["y"], x * 2)


def test_non_contiguous_array_is_copied_by_its_strides(rng):
    model = _model()
    base = _filled(kiln.zeros((17, 33)), rng)
    x = base.T  # aligned, but with strides (4, 132)
    out, buffer = _run(model, x)
    assert model.last_call_copies["x"] == "not C-contiguous (byte strides [4, 132])"
    assert not buffer.borrowed
    np.testing.assert_array_equal(out["same"], x)
    reversed_rows = base[::-1]  # negative strides
    out, _ = _run(_model((17, 33)), reversed_rows)
    np.testing.assert_array_equal(out["same"], reversed_rows)


def test_big_endian_array_is_copied_with_its_bytes_swapped(rng):
    model = _model()
    x = _filled(kiln.zeros((33, 17)), rng).astype(">f4")
    out, _ = _run(model, x)
    assert "big-endian" in model.last_call_copies["x"]
    np.testing.assert_array_equal(out["same"], x.astype(np.float32))


def test_a_list_is_converted_by_numpy_and_says_so():
    model = _model((2,), "f64")
    out = model(x=[0.5, 1.5])
    assert model.last_call_copies["x"].startswith("list converted by numpy.asarray")
    np.testing.assert_array_equal(out["y"], [1.0, 3.0])
    with pytest.raises(kiln.Error, match="input 'x' must be f64\\[2\\], got i64\\[2\\]"):
        model(x=[1, 2])  # numpy makes Python ints i64, and kiln converts no dtype


def test_wrong_dtype_is_an_error_not_a_conversion(rng):
    model = _model()
    x = rng.uniform(-1, 1, (33, 17))  # f64
    with pytest.raises(kiln.Error, match="input 'x' must be f32\\[33, 17\\], got f64\\[33, 17\\]"):
        model(x=x)


def test_read_only_memory_is_borrowed_and_never_written(tmp_path, rng):
    # A file mapped read-only: the pages are PROT_READ, so a kernel writing them would crash
    # the test, and numpy's own flag cannot be bypassed by a C++ write.
    values = rng.uniform(-1, 1, (33, 17)).astype(np.float32)
    path = tmp_path / "x.bin"
    values.tofile(path)
    x = np.memmap(path, dtype=np.float32, mode="r", shape=(33, 17))
    assert not x.flags.writeable and x.ctypes.data % 4096 == 0
    model = _model()
    out, buffer = _run(model, x)
    assert model.last_call_copies == {}
    assert buffer.borrowed and buffer.address == x.ctypes.data
    np.testing.assert_array_equal(out["y"], values * 2)
    # What Python sees of a borrowed buffer is read-only too.
    assert not np.asarray(buffer).flags.writeable
    assert np.array_equal(np.fromfile(path, np.float32).reshape(33, 17), values)
    del x, buffer
    model._last_inputs = None
    gc.collect()


def test_outputs_never_alias_a_borrowed_input(rng):
    model = _model()
    x = _filled(kiln.zeros((33, 17)), rng)
    before = x.copy()
    out, buffer = _run(model, x)
    assert buffer.borrowed
    assert out["same"].ctypes.data != x.ctypes.data
    out["same"][0, 0] = 99.0
    np.testing.assert_array_equal(x, before)


def test_an_output_of_one_model_is_read_in_place_by_the_next(rng):
    first, second = _model(), _model()
    x = _filled(kiln.zeros((33, 17)), rng)
    y = first(x=x)["y"]  # kiln's own memory, viewed by numpy
    out, buffer = _run(second, y)
    assert second.last_call_copies == {}
    assert buffer.address == y.ctypes.data
    np.testing.assert_array_equal(out["y"], x * 4)


def test_a_borrowed_input_lives_until_the_next_call_for_profile(rng):
    model = _model()
    x = _filled(kiln.zeros((33, 17)), rng)
    alive = weakref.ref(x)
    model(x=x)
    del x
    gc.collect()
    assert alive() is not None  # the model keeps the last inputs for profile()
    rows = model.profile(runs=2)
    assert rows and all(row["calls"] == 2 for row in rows)
    model(x=_filled(kiln.zeros((33, 17)), rng))
    gc.collect()
    assert alive() is None  # released with the call that replaced it


def test_contiguous_torch_tensors_are_read_in_place(rng):
    model = _model()
    x = torch.from_numpy(rng.uniform(-1, 1, (33, 17)).astype(np.float32)).clone()
    assert x.data_ptr() % 64 == 0  # torch's CPU allocator aligns to 64 bytes
    out, buffer = _run(model, x)
    assert model.last_call_copies == {}
    assert buffer.borrowed and buffer.address == x.data_ptr()
    assert torch.equal(out["y"], x * 2)
    # A tensor that needs grad is read in place too (detached), and bool through u8.
    x.requires_grad_(True)
    _, buffer = _run(model, x)
    assert buffer.address == x.data_ptr()
    flags = torch.from_numpy(rng.random((5, 3)) < 0.5).clone()
    graph = kiln.Graph("flags")
    graph.output("y", kiln.logical_not(graph.input("x", [5, 3], "bool")))
    flags_model = kiln.compile(graph, target="cpu")
    assert torch.equal(flags_model(x=flags)["y"], ~flags)
    assert flags_model.last_call_copies == {}
    assert flags_model._last_inputs["x"].address == flags.data_ptr()


def test_torch_views_that_cannot_be_read_in_place_are_copied(rng):
    model = _model()
    base = torch.from_numpy(rng.uniform(-1, 1, (34, 17)).astype(np.float32)).clone()
    shifted = base[1:]  # contiguous, 68 bytes past the allocation
    out, _ = _run(model, shifted)
    assert "not 64-byte aligned" in model.last_call_copies["x"]
    assert torch.equal(out["same"], shifted)
    transposed = torch.from_numpy(rng.uniform(-1, 1, (17, 33)).astype(np.float32)).t()
    out, _ = _run(model, transposed)
    assert model.last_call_copies["x"].startswith("not C-contiguous")
    assert torch.equal(out["same"], transposed)


def test_a_borrowed_buffer_exported_to_dlpack_is_copied_first(rng):
    # DLPack 0.6 views are writable and cannot be marked read-only: the buffer takes a copy of
    # its own before it is exported, so the borrowed memory stays untouched.
    x = _filled(kiln.zeros((4, 4)), rng)
    buffer, reason = _tensors.borrow_or_copy(x, "x")
    assert reason is None and buffer.borrowed
    view = torch.utils.dlpack.from_dlpack(buffer)
    assert not buffer.borrowed and view.data_ptr() != x.ctypes.data
    view[0, 0] = 42.0
    assert x[0, 0] != 42.0


def test_kiln_zeros_refuses_dtypes_numpy_lacks():
    assert kiln.zeros((2, 3), "i8").dtype == np.int8
    with pytest.raises(kiln.Error, match="numpy has no bf16 dtype"):
        kiln.zeros((2,), "bf16")
