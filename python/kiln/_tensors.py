"""Tensors in and out of kiln. In: a numpy array or torch tensor becomes a kiln HostBuffer that
borrows its memory when kiln's kernels can read it in place (C-contiguous, 64-byte aligned,
on the host; kiln never writes it), else a copy made once, with the reason. Out: a HostBuffer
kiln made becomes a numpy array (through the buffer protocol: numpy.from_dlpack would make it
read-only) or a torch tensor (through DLPack) that views its memory without a copy, except
where the dtype forbids it (numpy has no bf16 or f8; DLPack 0.6 no f8): those are converted
copies."""

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


def borrow_or_copy(value, what):
    """`value` (numpy array, torch tensor, number, list) as a HostBuffer, and why it is a copy:
    None when the buffer borrows `value`'s memory (keeping `value` alive)."""
    if isinstance(value, _kiln.HostBuffer):
        return value, None
    if is_torch_tensor(value):
        return _borrow_or_copy_torch(value, what)
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


def _borrow_or_copy_torch(tensor, what):
    torch = _torch()
    tensor = tensor.detach()
    moved = None
    if tensor.device.type != "cpu":
        moved = f"on {tensor.device}, moved to the CPU"  # kiln's runs take host tensors
        tensor = tensor.cpu()
    if tensor.dtype == torch.bool:  # DLPack 0.6 has no bool: the same bytes as u8
        capsule, dtype = torch.utils.dlpack.to_dlpack(tensor.view(torch.uint8)), "bool"
    else:
        capsule, dtype = torch.utils.dlpack.to_dlpack(tensor), None
    buffer, reason = _kiln._buffer_of_dlpack(capsule, dtype, what)
    return buffer, _reasons(moved, reason)


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
