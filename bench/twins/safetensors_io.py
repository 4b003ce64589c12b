"""A small safetensors reader and writer for torch tensors (the format: an
8-byte little-endian header length, a JSON header of dtype, shape and
data_offsets per tensor, then the raw little-endian data), so the twins need
no package beyond torch and numpy."""
import json
import struct

import numpy as np
import torch

_DTYPES = {
    "F64": (torch.float64, np.float64),
    "F32": (torch.float32, np.float32),
    "F16": (torch.float16, np.float16),
    "I64": (torch.int64, np.int64),
    "I32": (torch.int32, np.int32),
    "I8": (torch.int8, np.int8),
    "U8": (torch.uint8, np.uint8),
    "BOOL": (torch.bool, np.bool_),
}
_NAME_OF = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}


def save(path, tensors):
    """Writes {name: tensor} (any device) to `path`, in name order."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        data = tensor.numpy().astype(tensor.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _NAME_OF[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load(path):
    """Reads a safetensors file into {name: cpu tensor}."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        torch_dtype, np_dtype = _DTYPES[entry["dtype"]]
        start, end = entry["data_offsets"]
        array = np.frombuffer(raw[base + start:base + end], dtype=np.dtype(np_dtype).newbyteorder("<"))
        tensors[name] = torch.from_numpy(array.astype(np_dtype).reshape(entry["shape"]).copy())
        assert tensors[name].dtype == torch_dtype
    return tensors
