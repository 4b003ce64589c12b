"""Tensors in and out of kiln: numpy arrays and torch tensors become kiln HostBuffers (a
copy: kiln's host tensors own their memory), and a HostBuffer kiln made becomes a numpy
array (through the buffer protocol: numpy.from_dlpack would make it read-only) or a torch
tensor (through DLPack) that views its memory without a copy, except where the dtype
forbids it (numpy has no bf16 or f8; DLPack 0.6 no f8): those are converted copies."""

import numpy as np

from . import _kiln

# kiln dtypes with no numpy dtype: numpy results are converted to f32.
_NUMPY_LACKS = {"bf16", "f8e4m3", "f8e5m2"}
# kiln dtypes with no DLPack 0.6 type: torch results are converted to f32.
_DLPACK_LACKS = {"f8e4m3", "f8e5m2"}


def _torch():
    """torch, when the program has imported it (kiln never imports it itself)."""
    import sys

    return sys.modules.get("torch")


def is_torch_tensor(value):
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def to_buffer(value, what):
    """A HostBuffer holding a copy of `value` (numpy array, torch tensor, number, list)."""
    if isinstance(value, _kiln.HostBuffer):
        return value
    if is_torch_tensor(value):
        torch = _torch()
        tensor = value.detach()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()  # kiln's runs take host tensors
        if tensor.dtype == torch.bool:
            return _kiln._from_dlpack(torch.utils.dlpack.to_dlpack(tensor.to(torch.uint8)), "bool", what)
        return _kiln._from_dlpack(torch.utils.dlpack.to_dlpack(tensor), None, what)
    return _kiln._from_numpy(np.asarray(value), what)


def to_numpy(buffer):
    """A writable numpy array viewing `buffer` (a converted f32 copy for bf16 and f8)."""
    if buffer.dtype in _NUMPY_LACKS:
        buffer = buffer.as_dtype("f32")
    return np.asarray(buffer)


def to_torch(buffer):
    """A torch tensor viewing `buffer` (a converted f32 copy for f8)."""
    torch = _torch()
    if buffer.dtype in _DLPACK_LACKS:
        buffer = buffer.as_dtype("f32")
    tensor = torch.utils.dlpack.from_dlpack(buffer)
    return tensor.view(torch.bool) if buffer.dtype == "bool" else tensor
