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


def _error(message):
    """A kiln.Error raised by the Python part, located at the user's line as the C++ errors."""
    return _kiln._error(message)


def _buffers(tensors, kind):
    return {name: _tensors.to_buffer(value, f"{kind} '{name}'") for name, value in tensors.items()}


def _input_buffers(inputs, model_device, on_device=False):
    """A run's inputs for a model on `model_device`: HostBuffers by name, DeviceTensors by name
    (with `on_device`: the CUDA tensors, which a cuda model reads on its GPU), and {name: why
    it was copied} for those that could not be read in place."""
    buffers, views, copies = {}, {}, {}
    for name, value in inputs.items():
        what = f"input '{name}'"
        if on_device and _tensors.is_cuda_tensor(value) and value.numel() > 0:
            views[name], reason = _tensors.device_tensor(value, _torch_device(model_device), what)
        else:
            buffers[name], reason = _tensors.borrow_or_copy(value, what, model_device)
        if reason:
            copies[name] = reason
    return buffers, views, copies


def _torch_device(name):
    return _tensors._torch().device(name)


def _finish_torch_work(model_device):
    """Waits for the work torch queued on its current stream of the model's GPU (the inputs'
    producers, copies made for kiln, earlier users of the outputs' memory): kiln's run goes
    on a stream of its own, and the legacy DLPack capsule carries no stream to wait on."""
    torch = _tensors._torch()
    torch.cuda.current_stream(_torch_device(model_device)).synchronize()


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
    array or tensor of a kiln dtype, or on the cuda target a CUDA tensor on the model's GPU;
    kiln never writes it) and copied once otherwise: `last_call_copies` names the inputs the
    last call copied, and why. Outputs are not copied: each numpy array or torch tensor
    views the memory the run wrote (on the cuda target with CUDA inputs, CUDA tensors the
    kernels wrote), and never an input's."""

    def __init__(self, compiled, options):
        self._compiled = compiled
        self._options = options  # kiln.compile's precision, backend and gpu_arch, for kiln.tune
        self._last_inputs = None  # the last run's input buffers (views or copies), for profile()
        self._last_device_inputs = {}  # and its CUDA inputs (DeviceTensors) on a cuda model
        self._last_call_copies = {}

    def _on_device(self, inputs):
        """Whether a call runs on the GPU's memory from end to end: a model on a GPU given
        CUDA tensors reads them there and writes CUDA outputs."""
        return self._compiled.device.startswith("cuda:") and any(
            _tensors.is_cuda_tensor(value) for value in inputs.values())

    def _inputs_for(self, inputs):
        """A call's (HostBuffers, DeviceTensors, copies)."""
        return _input_buffers(inputs, self._compiled.device, self._on_device(inputs))

    def __call__(self, **inputs):
        self._last_inputs, self._last_device_inputs, self._last_call_copies = (
            self._inputs_for(inputs))
        if not self._on_device(inputs):
            return _results(self._compiled._run(self._last_inputs), _any_torch(inputs))
        # CUDA in, CUDA out: the kernels read the inputs and write the outputs in torch's memory.
        device = self._compiled.device
        gpu = _torch_device(device)
        outputs, views = _tensors.device_outputs(self._compiled.output_types, gpu)
        _finish_torch_work(device)
        fetched = self._compiled._run_on_device(self._last_inputs, self._last_device_inputs,
                                                views)
        for name, buffer in fetched.items():  # an f8 or empty output: through the host
            outputs[name] = _tensors.to_torch(buffer).to(gpu)
        return {name: outputs[name] for name in self._compiled.output_names}

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
        """Runs `runs` times with per-kernel timing (after one untimed run where the model keeps
        values derived from its weights), on `inputs` or else the last call's (the
        same arrays, kept alive, as they are now: inputs read in place are not snapshots);
        returns one dict per kernel (name, calls, total_ms, mean_ms, bytes and flops per
        call, achieved rates, fraction of peak, bound), slowest first."""
        if inputs:
            buffers, views, self._last_call_copies = self._inputs_for(inputs)
        elif self._last_inputs is not None:
            buffers, views = self._last_inputs, self._last_device_inputs
        else:
            raise _error("profile() needs the model's inputs: pass them, or run the model once first")
        if views:
            _finish_torch_work(self._compiled.device)
        return self._compiled._profile(buffers, runs, views)

    @property
    def num_kernels(self):
        return self._compiled.num_kernels

    @property
    def target(self):
        return self._compiled.target

    @property
    def device(self):
        """Where the kernels run: "cpu", "sim" or "cuda:N" (torch's name for that GPU)."""
        return self._compiled.device

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
