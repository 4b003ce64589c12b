"""Shared helpers of the kiln Python tests: per-dtype tolerances, seeded random inputs, a
kernel cache of the test run's own, and the runner that checks a graph's compiled outputs
against kiln's reference interpreter."""

import os
import shutil
import tempfile
import zlib

import numpy as np
import pytest

# |actual - expected| <= atol + rtol * |expected|, per kiln dtype of the compared output.
TOLERANCES = {
    "f64": (1e-12, 1e-12),
    "f32": (2e-5, 2e-5),
    "f16": (2e-3, 2e-3),
    "bf16": (2e-2, 2e-2),
    "i64": (0, 0),
    "i32": (0, 0),
    "i8": (0, 0),
    "bool": (0, 0),
}

NUMPY_DTYPES = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "i64": np.int64,
    "i32": np.int32,
    "i8": np.int8,
    "bool": np.bool_,
}


def pytest_configure(config):
    # Compiled kernels go to a cache of this run's own, not the user's.
    config._kiln_cache_dir = tempfile.mkdtemp(prefix="kiln-pytest-cache-")
    os.environ["KILN_CACHE_DIR"] = config._kiln_cache_dir
    # Where matplotlib is installed, plots are drawn off screen.
    os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_kiln_cache_dir", ""), ignore_errors=True)


def assert_close(actual, expected, dtype, what=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    atol, rtol = TOLERANCES[dtype]
    if dtype == "bool" or atol == 0:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
        )


class Inputs:
    """Makes graph inputs with fresh random values (never zeros, never one lucky size)."""

    def __init__(self, graph, rng):
        self.graph = graph
        self.rng = rng
        self.values = {}

    def __call__(self, name, shape, dtype="f32", low=-2.0, high=2.0):
        if dtype == "bool":
            value = self.rng.random(shape) < 0.5
        elif dtype.startswith("i"):
            value = self.rng.integers(int(low), int(high), size=shape).astype(NUMPY_DTYPES[dtype])
        else:
            value = self.rng.uniform(low, high, size=shape).astype(NUMPY_DTYPES[dtype])
        self.values[name] = value
        return self.graph.input(name, list(shape), dtype)


@pytest.fixture
def rng(request):
    # A seed per test, so each test's inputs are fixed but differ between tests.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def compile_and_compare(graph, inputs, dtype, target="cpu"):
    """Compiles `graph` for `target`, runs it on `inputs` and checks every output against
    the reference interpreter. Returns (compiled outputs, reference outputs)."""
    import kiln

    model = kiln.compile(graph, target=target)
    got = model(**inputs)
    reference = kiln.evaluate(graph, **inputs)
    assert set(got) == set(reference)
    for name in reference:
        assert_close(got[name], reference[name], dtype, f"output {name}")
    return got, reference
