"""Tensors in and out of kiln. In: a numpy array or torch tensor becomes a kiln HostBuffer that
borrows its memory when kiln's kernels can read it in place (C-contiguous, 64-byte aligned,
on the host; kiln never writes it), else a copy made once, with the reason; a CUDA torch
tensor given to a model on its GPU becomes a DeviceTensor the kernels read in place. Out: a
HostBuffer kiln made becomes a numpy array (through the buffer protocol: numpy.from_dlpack
would make it read-only) or a torch tensor (through DLPack) that views its memory without a
copy, except where the dtype forbids it (numpy has no bf16 or f8; DLPack 0.6 no f8): those
are converted copies. A cuda model's outputs for CUDA inputs are torch tensors on its GPU
that its kernels write in place (device_outputs)."""

import numpy as np

from . import _kiln

# kiln dtypes with no numpy dtype: numpy results are converted to f32.
NUMPY_LACKS = {"bf16", "f8e4m3", "f8e5m2"}
# kiln dtypes with no DLPack 0.6 type: torch results are converted to f32.
_DLPACK_LACKS = {"f8e4m3", "f8e5m2"}


def _torch():
    """torch, when the program has imported it (kiln never imports it itself)."""
    import sys

    return sys.modules.get("torch")


def is_torch_tensor(value):
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def is_cuda_tensor(value):
    return is_torch_tensor(value) and value.device.type == "cuda"


def placement(tensor_device, model_device):
    """Where a tensor on GPU `tensor_device` ("cuda:0") goes for a model whose kernels run on
    `model_device` ("cpu", "sim" or "cuda:N"), and why that is a copy: ("device", None) is
    read in place, ("device", why) is copied to the model's GPU first, ("host", why) is
    copied to the host (the CPU and the simulator read host memory)."""
    if tensor_device == model_device:
        return "device", None
    moved = f"on {tensor_device}, and the model runs on {model_device}"
    if model_device.startswith("cuda:"):
        return "device", f"{moved}: copied there"
    return "host", f"{moved}: copied to the host"


def borrow_or_copy(value, what, model_device="cpu"):
    """`value` (numpy array, torch tensor, number, list) as a HostBuffer, and why it is a copy:
    None when the buffer borrows `value`'s memory (keeping `value` alive). A CUDA tensor is
    copied to the host (`model_device` says where the model runs, for the reason)."""
    if isinstance(value, _kiln.HostBuffer):
        return value, None
    if is_torch_tensor(value):
        return _borrow_or_copy_torch(value, what, model_device)
    if isinstance(value, np.ndarray):
        return _kiln._buffer_of_numpy(value, what)
    array = np.asarray(value)
    buffer, reason = _kiln._buffer_of_numpy(array, what)
    if array.flags.owndata:  # numpy made a new array of `value`: that was a copy
        reason = _reasons(f"{type(value).__name__} converted by numpy.asarray", reason)
    return buffer, reason


def to_buffer(value, what):
    """A HostBuffer of `value`: a view of its memory where kiln can read it in place, else a
    copy (a graph's parameters and constants then copy it into values of their own)."""
    return borrow_or_copy(value, what)[0]


def _borrow_or_copy_torch(tensor, what, model_device):
    tensor = tensor.detach()
    moved = None
    if tensor.device.type != "cpu":
        moved = placement(str(tensor.device), model_device)[1] if tensor.numel() else None
        tensor = tensor.cpu()
    buffer, reason = _kiln._buffer_of_dlpack(*_capsule(tensor), what)
    return buffer, _reasons(moved, reason)


def _capsule(tensor):
    """A legacy DLPack capsule of `tensor`, and the kiln dtype that overrides its type."""
    torch = _torch()
    if tensor.dtype == torch.bool:  # DLPack 0.6 has no bool: the same bytes as u8
        return torch.utils.dlpack.to_dlpack(tensor.view(torch.uint8)), "bool"
    return torch.utils.dlpack.to_dlpack(tensor), None


def device_tensor(tensor, device, what):
    """A DeviceTensor of non-empty CUDA `tensor` that a model on `device` (a torch.device)
    reads in place, and why it is a copy: None when it is `tensor`'s own memory; else a
    contiguous copy made by torch on `device` (from another GPU, or of a non-contiguous or
    misaligned tensor). The DeviceTensor keeps the memory alive."""
    torch = _torch()
    tensor = tensor.detach()
    moved = placement(str(tensor.device), str(device))[1]
    if moved:
        tensor = tensor.to(device, memory_format=torch.contiguous_format)
    view, reason = _kiln._device_tensor_of_dlpack(*_capsule(tensor), what)
    if view is None:  # torch's allocations are contiguous and 512-byte aligned
        copied = tensor.clone(memory_format=torch.contiguous_format)
        view, again = _kiln._device_tensor_of_dlpack(*_capsule(copied), what)
        if view is None:
            raise RuntimeError(f"kiln bug: {what}: torch's contiguous copy is not usable in "
                               f"place either ({again})")
        reason = f"{reason}: copied on {device}"
    return view, _reasons(moved, reason)


# kiln dtypes as torch dtypes, by name (f8 has none in torch 1.13).
_TORCH_DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
                 "i64": "int64", "i32": "int32", "i8": "int8", "bool": "bool"}


def device_outputs(output_types, device):
    """For a run on a cuda model: {name: torch tensor on `device`} for every output of
    `output_types` ({name: (dtype, shape)}) that kiln's kernels write in place (those with a
    torch dtype and elements), and {name: its DeviceTensor}. torch allocates them, so torch's
    allocator owns and frees that memory like any tensor's."""
    torch = _torch()
    tensors, views = {}, {}
    for name, (dtype, shape) in output_types.items():
        if dtype not in _TORCH_DTYPES or 0 in shape:
            continue
        tensors[name] = torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[dtype]),
                                    device=device)
        views[name], _ = _kiln._device_tensor_of_dlpack(*_capsule(tensors[name]),
                                                        f"output '{name}'")
    return tensors, views


def _reasons(*reasons):
    """The reasons that are not None, joined; None when there are none."""
    present = [reason for reason in reasons if reason]
    return "; then ".join(present) if present else None


def to_numpy(buffer):
    """A writable numpy array viewing `buffer` (a converted f32 copy for bf16 and f8)."""
    if buffer.dtype in NUMPY_LACKS:
        buffer = buffer.as_dtype("f32")
    return np.asarray(buffer)


def to_torch(buffer):
    """A torch tensor viewing `buffer` (a converted f32 copy for f8)."""
    torch = _torch()
    if buffer.dtype in _DLPACK_LACKS:
        buffer = buffer.as_dtype("f32")
    tensor = torch.utils.dlpack.from_dlpack(buffer)
    return tensor.view(torch.bool) if buffer.dtype == "bool" else tensor
