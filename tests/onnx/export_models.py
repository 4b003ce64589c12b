#!/usr/bin/python3
"""Exports the ONNX test models with PyTorch and writes, beside each, the input it was run on
and PyTorch's eval-mode output (.npy), so the kiln tests compare with PyTorch itself.

Usage: export_models.py OUT_DIR [NAME...]   (no names: every model)
Writes OUT_DIR/<name>.onnx, <name>.in.<input>.npy, <name>.out.<output>.npy and
OUT_DIR/manifest.json ({name: {"inputs": {name: shape}, "outputs": [names], "opset": N,
"dynamic": {input: {axis: dim_param}}}}). Weights are random with a fixed seed; nothing is
downloaded. Exits 77 (skipped) when torch, torchvision or onnx is missing.
"""
import json
import os
import sys

try:
    import numpy as np
    import torch
    import torchvision
    import onnx  # noqa: F401  (torch.onnx needs it to check models)
except ImportError as missing:
    print(f"skipped: {missing} (scripts/setup.sh installs python3-torch, python3-torchvision "
          f"and python3-onnx)")
    sys.exit(77)


def randomize_batch_norms(model):
    """Eval-mode BatchNorm with default running stats is nearly the identity: give every
    BatchNorm random statistics and affine weights so the test sees the folding."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            if module.affine:
                module.weight.data.uniform_(0.5, 1.5)
                module.bias.data.uniform_(-0.5, 0.5)
    return model


class SeedCnn(torch.nn.Module):
    """The seed workload's Fashion-MNIST CNN (examples/models), in PyTorch."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(64, 64, 3), torch.nn.ReLU())
        self.head = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(64 * 3 * 3, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 10), torch.nn.Softmax(dim=1))

    def forward(self, x):
        return self.head(self.features(x))


class Encoder(torch.nn.Module):
    """nn.TransformerEncoder, batch first, GELU feed-forward."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                 dropout=0.0, activation="gelu",
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                                   enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class GptBlock(torch.nn.Module):
    """A GPT-style decoder block over int64 token ids, causal mask from torch.tril."""

    def __init__(self, vocab=50, context=16, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(context, width)
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))
        self.head = torch.nn.Linear(width, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)))

    def forward(self, ids):
        batch, length = ids.shape
        x = self.tokens(ids) + self.positions(torch.arange(length))
        q, k, v = self.qkv(self.norm1(x)).split(x.shape[-1], dim=-1)
        split = lambda t: t.view(batch, length, self.heads, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        scores = scores.masked_fill(self.mask[:length, :length] == 0, float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, -1)
        x = x + self.proj(attended)
        x = x + self.mlp(self.norm2(x))
        return self.head(x)


class LstmLanguageModel(torch.nn.Module):
    """Embedding, a 2-layer bidirectional nn.LSTM from given initial states, a vocabulary
    head; returns the logits and the final hidden and cell states."""

    def __init__(self, vocab=40, width=16, hidden=24):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.lstm = torch.nn.LSTM(width, hidden, num_layers=2, bidirectional=True,
                                  batch_first=True)
        self.head = torch.nn.Linear(2 * hidden, vocab)

    def forward(self, ids, h0, c0):
        y, (h, c) = self.lstm(self.embed(ids), (h0, c0))
        return self.head(y), h, c


class GruLanguageModel(torch.nn.Module):
    """Embedding, a 2-layer nn.GRU from a given initial state, a vocabulary head."""

    def __init__(self, vocab=40, width=16, hidden=24):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.gru = torch.nn.GRU(width, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, ids, h0):
        y, h = self.gru(self.embed(ids), h0)
        return self.head(y), h


class OpsZoo(torch.nn.Module):
    """One model through the converters the real models above leave out: 1-D windows, the
    activations, pads, splits, strided slices, ranges, triangles, reductions, comparisons,
    casts and an argmax output."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 6, 3, padding=1)
        self.linear = torch.nn.Linear(2, 5)

    def forward(self, x):  # x [2, 4, 9]
        F = torch.nn.functional
        a = self.conv(x)
        b = (F.elu(a, 0.7) + F.leaky_relu(a, 0.2) + F.softplus(a) + F.mish(a)
             + F.hardsigmoid(a) + F.hardswish(a) + F.relu6(a * 4) + F.hardtanh(a, -0.5, 0.5))
        c = F.avg_pool1d(b, 3, stride=2, padding=1, count_include_pad=True)
        c = c + F.max_pool1d(b, 2, stride=2, ceil_mode=True)[..., :c.shape[-1]]
        d = F.pad(c, (1, 2), value=0.5)
        e, f = torch.split(d, [2, 4], dim=1)
        f = f[:, ::2] + f[:, 1::2]
        g = torch.maximum(e, f) - torch.minimum(e, f) + torch.where(e > f, e, f ** 2)
        g = g + torch.reciprocal(g.abs() + 1) + torch.sqrt(g.abs()) + torch.sin(g) * torch.cos(g)
        g = g + torch.exp(-g.abs()) + torch.log(g.abs() + 1) + torch.erf(g)
        positions = torch.arange(g.shape[-1], dtype=torch.float32)
        g = g * positions / g.shape[-1]
        mask = torch.triu(torch.ones(g.shape[-1], g.shape[-1]), diagonal=1)
        h = g @ mask
        k = h.amax(dim=-1, keepdim=True) + h.amin(dim=-1, keepdim=True) + h.mean(dim=1, keepdim=True)
        k = k + torch.prod(torch.tanh(h), dim=-1, keepdim=True)
        both = (h > 0) & ~(h > 1) | (h < -1)
        k = k + both.float() + F.log_softmax(h, dim=-1) + F.softmax(h, dim=1)
        y = self.linear(k.transpose(1, 2).flatten(0, 1).expand(3, -1, -1)[1, 3:, :2])
        return y, torch.argmax(h, dim=-1)


def torchvision_model(name):
    return lambda: randomize_batch_norms(getattr(torchvision.models, name)(weights=None))


def vgg11_bn_small_head():
    """torchvision's vgg11_bn at 224x224 (its adaptive pool exports only where 7 divides the
    feature map), with a narrow classifier: the full head holds 120M weights (480 MB)."""
    model = torchvision.models.vgg11_bn(weights=None)
    model.classifier = torch.nn.Sequential(torch.nn.Linear(512 * 7 * 7, 64), torch.nn.ReLU(),
                                           torch.nn.Dropout(), torch.nn.Linear(64, 10))
    return randomize_batch_norms(model)


def example_twins():
    """The PyTorch twins of kiln's example models (bench/twins), at a small batch (the
    VGG16-shaped one at 1): name -> (build, inputs)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from bench import twins
    entries = {}
    for name in ["mlp", "lstm", "resnet", "transformer", "vgg"]:
        twin = twins.TWINS[name]
        inputs = {key: (tuple(shape), "int64" if isinstance(kind, tuple) else "float32")
                  for key, (shape, kind) in twin.input_specs(1 if name == "vgg" else 2).items()}
        entries[f"example_{name}_op17"] = (twin.Twin, inputs, 17, False)
    return entries


# name -> (build, {input: (shape, dtype)}, opset, dynamic batch?)
IMAGE = {"input": ((2, 3, 64, 64), "float32")}
MODELS = {
    "seed_cnn_op13": (SeedCnn, {"input": ((3, 1, 28, 28), "float32")}, 13, True),
    "seed_cnn_op17": (SeedCnn, {"input": ((3, 1, 28, 28), "float32")}, 17, False),
    # Every torchvision model at opsets 13 and 17: the version converter's output must import
    # as the exporter's own opset-17 graph does.
    **{f"{name}_op{opset}": (torchvision_model(name), IMAGE, opset, True)
       for name in ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
                    "squeezenet1_1", "shufflenet_v2_x0_5", "efficientnet_b0", "densenet121",
                    "regnet_y_400mf"]
       for opset in (13, 17)},
    **{f"vgg11_bn_op{opset}": (vgg11_bn_small_head, {"input": ((1, 3, 224, 224), "float32")},
                               opset, True) for opset in (13, 17)},
    "encoder_op14": (Encoder, {"x": ((2, 7, 32), "float32")}, 14, False),
    "encoder_op17": (Encoder, {"x": ((2, 7, 32), "float32")}, 17, False),
    "gpt_block_op17": (GptBlock, {"ids": ((2, 11), "int64")}, 17, False),
    "ops_zoo_op17": (OpsZoo, {"x": ((2, 4, 9), "float32")}, 17, False),
    "lstm_lm_op13": (LstmLanguageModel, {"ids": ((2, 9), "int64"), "h0": ((4, 2, 24), "float32"),
                                         "c0": ((4, 2, 24), "float32")}, 13, False),
    "gru_lm_op13": (GruLanguageModel, {"ids": ((2, 9), "int64"), "h0": ((2, 2, 24), "float32")},
                    13, False),
    **example_twins(),
}


# The torchvision models also run on the simulator, at 1x3x32x32: their opset-17 exports leave
# the batch, height and width open, and a second input and PyTorch output are saved for it.
SIM_SMALL = {f"{name}_op17": {"input": ((1, 3, 32, 32), "float32")}
             for name in ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
                          "squeezenet1_1", "shufflenet_v2_x0_5", "efficientnet_b0",
                          "densenet121", "regnet_y_400mf"]}


def random_input(shape, dtype, generator):
    if dtype == "int64":
        return torch.randint(0, 40, shape, generator=generator, dtype=torch.int64)
    return torch.randn(shape, generator=generator)


def export(name, out_dir):
    build, inputs, opset, dynamic = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    generator = torch.Generator().manual_seed(1)
    args = {key: random_input(shape, dtype, generator) for key, (shape, dtype) in inputs.items()}
    path = os.path.join(out_dir, f"{name}.onnx")
    small = SIM_SMALL.get(name)
    open_axes = {0: "batch", 2: "height", 3: "width"} if small else {0: "batch"}
    dynamic_axes = {key: open_axes for key in inputs} if dynamic else None
    with torch.no_grad():
        expected = model(*args.values())
        if small:
            small_args = {key: random_input(shape, dtype, generator)
                          for key, (shape, dtype) in small.items()}
            small_expected = model(*small_args.values())
    if not isinstance(expected, tuple):
        expected = (expected,)
    outputs = ["output"] + [f"state{i}" for i in range(1, len(expected))]
    # Exported with autograd on: in eval mode under no_grad, nn.TransformerEncoder takes a
    # fused fast path that has no ONNX form.
    torch.onnx.export(model, tuple(args.values()), path, opset_version=opset,
                      input_names=list(inputs), output_names=outputs,
                      dynamic_axes=dynamic_axes, do_constant_folding=True)
    for key, value in args.items():
        np.save(os.path.join(out_dir, f"{name}.in.{key}.npy"), value.numpy())
    for output, value in zip(outputs, expected):
        np.save(os.path.join(out_dir, f"{name}.out.{output}.npy"), value.numpy())
    entry = {"inputs": {key: list(shape) for key, (shape, _) in inputs.items()},
             "outputs": outputs, "opset": opset,
             "dynamic": {key: {str(axis): dim for axis, dim in open_axes.items()}
                         for key in inputs} if dynamic else {}}
    if small:
        np.save(os.path.join(out_dir, f"{name}.sim.in.input.npy"), small_args["input"].numpy())
        np.save(os.path.join(out_dir, f"{name}.sim.out.output.npy"), small_expected.numpy())
        entry["sim_inputs"] = {key: list(shape) for key, (shape, _) in small.items()}
    return entry


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    manifest = {name: export(name, out_dir) for name in names}
    with open(os.path.join(out_dir, "manifest.json.tmp"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(os.path.join(out_dir, "manifest.json.tmp"), os.path.join(out_dir, "manifest.json"))
    print(f"exported {len(manifest)} models to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
