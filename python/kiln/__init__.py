"""kiln from Python: build graphs with the DSL, compile them, run them on numpy arrays or
torch tensors, and read every stage's text. A thin skin over kiln's C++ API (docs/python.md)."""

import importlib as _importlib
import os as _os

from . import _kiln
from ._kiln import *  # noqa: F401,F403  (Graph, Tensor, Error, parse_ir and the op functions)
from ._kiln import Error, Graph, Tensor, parse_ir  # noqa: F401
from . import _tensors
from .schedules import (  # noqa: F401
    Group, TuningDatabase, groups, plot_sweep, schedule_space, sweep, sweep_svg, sweep_table, tune)
from .training import Trainer, train  # noqa: F401
from . import schedules as _schedules

# kiln.nn and kiln.onnx are nn.py and onnx.py, which wrap the compiled _kiln.nn and
# _kiln.onnx (the star import above brought those in under the same names; `from . import nn`
# would keep them).
nn = _importlib.import_module(".nn", __name__)
onnx = _importlib.import_module(".onnx", __name__)

# Frames in this package are kiln's, not the user's: errors name the first frame outside it.
_kiln._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

__version__ = _kiln.__version__


def _param_values(graph):
    """Every parameter's current value by full name, as numpy arrays."""
    return {name: _tensors.to_numpy(buffer) for name, buffer in graph._param_buffers().items()}


Graph.param_values = _param_values

_graph_param = Graph.param


def _param(graph, name, value, trainable=True):
    """A parameter named `<scope>.<name>` with initial `value` (an array or tensor)."""
    return _graph_param(graph, name, _tensors.to_buffer(value, f"parameter '{name}'"), trainable)


Graph.param = _param


def constant(graph, value, shape=(), dtype=None):
    """A literal: an array or tensor copied into the graph, or a number splatted over `shape`."""
    if isinstance(value, (int, float, bool)):
        return _kiln._constant_splat(graph, float(value), list(shape), dtype or "f32")
    buffer = _tensors.to_buffer(value, "constant")
    if dtype is not None and dtype != buffer.dtype:
        buffer = buffer.as_dtype(dtype)
    return _kiln._constant_of(graph, buffer)


def zeros(shape, dtype="f32"):
    """A zero-filled numpy array in kiln's own memory, 64-byte aligned: fill it and pass it
    as an input, and kiln reads it in place (numpy's own arrays are only 16-byte aligned, and
    kiln copies those). `dtype` is a kiln dtype numpy has (not bf16 or f8)."""
    if dtype in _tensors.NUMPY_LACKS:
        raise _error(f"numpy has no {dtype} dtype: kiln.zeros makes numpy arrays")
    return _tensors.to_numpy(_kiln._zeros([int(size) for size in shape], dtype))


def _error(message, code="invalid argument"):
    """A kiln.Error raised by the Python part, with the attributes the C++ errors carry."""
    error = Error(message)
    error.code, error.message, error.file, error.line, error.notes = code, message, None, None, []
    return error


def _buffers(tensors, kind):
    return {name: _tensors.to_buffer(value, f"{kind} '{name}'") for name, value in tensors.items()}


def _input_buffers(inputs):
    """A run's inputs as HostBuffers by name, and {name: why it was copied} for those that
    could not be read in place."""
    buffers, copies = {}, {}
    for name, value in inputs.items():
        buffers[name], reason = _tensors.borrow_or_copy(value, f"input '{name}'")
        if reason:
            copies[name] = reason
    return buffers, copies


def _results(buffers, like_torch):
    convert = _tensors.to_torch if like_torch else _tensors.to_numpy
    return {name: convert(buffer) for name, buffer in buffers.items()}


def _any_torch(tensors):
    return any(_tensors.is_torch_tensor(value) for value in tensors.values())


def evaluate(graph, **inputs):
    """Runs `graph` through kiln's fp64 reference interpreter (inputs by name; a parsed
    graph's parameters too). Returns the outputs by name, as numpy arrays (torch tensors
    when the inputs are)."""
    return _results(graph._evaluate(_buffers(inputs, "input")), _any_torch(inputs))


class CompiledModel:
    """A compiled graph. `model(x=...)` runs it: numpy arrays or torch tensors in, a dict of
    outputs by name out, of the same kind as the inputs.

    Inputs are read in place where kiln's kernels can (a C-contiguous, 64-byte aligned host
    array or tensor of a kiln dtype; kiln never writes it) and copied once otherwise:
    `last_call_copies` names the inputs the last call copied, and why. Outputs are not
    copied: each numpy array or torch tensor views the memory the run wrote, and never an
    input's."""

    def __init__(self, compiled, options):
        self._compiled = compiled
        self._options = options  # kiln.compile's precision, backend and gpu_arch, for kiln.tune
        self._last_inputs = None  # the last run's input buffers (views or copies), for profile()
        self._last_call_copies = {}

    def __call__(self, **inputs):
        self._last_inputs, self._last_call_copies = _input_buffers(inputs)
        return _results(self._compiled._run(self._last_inputs), _any_torch(inputs))

    @property
    def last_call_copies(self):
        """{input name: why kiln copied it} for the last call's (or profile's) inputs; an
        input not named was read in place."""
        return dict(self._last_call_copies)

    def dump(self, stage):
        """The text of a compile stage: "graph", "fused", "kernel", "llvm", and for GPU
        targets "ptx" and "cuda" (as Triton's .asm)."""
        return self._compiled.dump(stage)

    def profile(self, runs=1, **inputs):
        """Runs `runs` times with per-kernel timing, on `inputs` or else the last call's (the
        same arrays, kept alive, as they are now: inputs read in place are not snapshots);
        returns one dict per kernel (name, calls, total_ms, mean_ms, bytes and flops per
        call, achieved rates, fraction of peak, bound), slowest first."""
        if inputs:
            buffers, self._last_call_copies = _input_buffers(inputs)
        elif self._last_inputs is not None:
            buffers = self._last_inputs
        else:
            raise _error("profile() needs the model's inputs: pass them, or run the model once first")
        return self._compiled._profile(buffers, runs)

    @property
    def num_kernels(self):
        return self._compiled.num_kernels

    @property
    def target(self):
        return self._compiled.target

    @property
    def report(self):
        return self._compiled.report

    @property
    def input_names(self):
        return self._compiled.input_names

    @property
    def output_names(self):
        return self._compiled.output_names


def compile(graph, target="auto", precision="fp32", backend="llvm", gpu_arch="", kernel_cache=True,
            schedules=None):
    """Compiles `graph` for target "cpu", "sim" (GPU kernels on the SIMT simulator), "cuda"
    or "auto", with a precision policy ("fp32", "tf32", "bf16-mixed", "fp16-mixed", "fp8")
    and, for GPU code, backend "llvm" (NVPTX) or "nvrtc" (CUDA C). `schedules` forces a
    schedule on groups: {group (a kiln.Group or its id): schedule text}; it wins over the
    heuristic and the tuning database, and every dump names it."""
    forced = {_schedules.group_id(group): text for group, text in (schedules or {}).items()}
    return CompiledModel(_kiln._compile(graph, target, precision, backend, gpu_arch, kernel_cache,
                                        forced),
                         {"precision": precision, "backend": backend, "gpu_arch": gpu_arch})
