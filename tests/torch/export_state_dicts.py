#!/usr/bin/python3
"""Writes PyTorch modules' state dicts (safetensors), an input and the module's output (.npy)
for tests/torch/TorchStateDictTest.cpp, which builds the same models with kiln's nn layers,
loads the state dicts with Graph::loadTorchStateDict and compares.

Usage: export_state_dicts.py OUT_DIR. Exits 77 (skipped) without torch and numpy.
"""
import json
import os
import struct
import sys

try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"skipped: {missing} (scripts/setup.sh installs python3-torch)")
    sys.exit(77)


def save_safetensors(path, tensors):
    """The safetensors format, written here (Debian has no python3-safetensors): a
    little-endian u64 header length, a JSON header, the packed data."""
    names = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, data, offset = {}, [], 0
    for name in sorted(tensors):
        array = tensors[name].detach().contiguous().numpy()
        raw = array.tobytes()
        header[name] = {"dtype": names[tensors[name].dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(data))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(7, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return (self.fc2(torch.relu(self.fc1(x))),)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return (self.fc(y.flatten(1)),)


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 6)
        self.lstm = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, ids, h0, c0):
        y, (h, c) = self.lstm(self.embed(ids), (h0, c0))
        return y, h, c


class Gru(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 7, num_layers=2, batch_first=True)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return y, h


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return (self.norm(x + y),)


class PaddedAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x, pad):
        y, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        return (y,)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    cases = {
        "mlp": (Mlp(), {"x": torch.randn(4, 7)}),
        "cnn": (Cnn(), {"x": torch.randn(2, 3, 8, 8)}),
        "lstm": (Lstm(), {"ids": torch.randint(0, 20, (3, 5)), "h0": torch.randn(4, 3, 8),
                          "c0": torch.randn(4, 3, 8)}),
        "gru": (Gru(), {"x": torch.randn(3, 6, 5), "h0": torch.randn(2, 3, 7)}),
        "attention": (Attention(), {"x": torch.randn(2, 5, 16)}),
        # The first two keys of each sequence are never padding, so no row is empty.
        "padded_attention": (PaddedAttention(), {
            "x": torch.randn(3, 6, 16),
            "pad": torch.tensor([[0, 0, 1, 0, 1, 1], [0, 0, 0, 0, 0, 1], [0, 0, 1, 1, 1, 1]],
                                dtype=torch.bool)}),
    }
    for name, (model, inputs) in cases.items():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.data.uniform_(0.5, 1.5)
                module.bias.data.uniform_(-0.5, 0.5)
        model.eval()
        with torch.no_grad():
            outputs = model(*inputs.values())
        save_safetensors(os.path.join(out, f"{name}.safetensors"), model.state_dict())
        for key, value in inputs.items():
            np.save(os.path.join(out, f"{name}.in.{key}.npy"), value.numpy())
        for index, value in enumerate(outputs):
            np.save(os.path.join(out, f"{name}.out{index}.npy"), value.numpy())
    print(f"wrote {len(cases)} state dicts to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
