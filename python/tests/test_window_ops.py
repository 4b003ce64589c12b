"""The windowed, normalizing and attention ops (conv2d, pooling, layer and batch norm,
scaled dot-product attention): compiled for the CPU against kiln's reference interpreter,
and the interpreter against PyTorch's functions, at an odd and a round size."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import Inputs, assert_close, compile_and_compare

SIZES = [7, 16]


def _t(value):
    return torch.from_numpy(np.ascontiguousarray(value)).double()


def _conv2d(g, inp, n):
    x = inp("x", [2, 3, n, n + 1])
    w = inp("w", [4, 3, 3, 3])
    return kiln.conv2d(x, w, stride=2, padding="same")


def _conv2d_ref(v, n):
    # TensorFlow "same" with stride 2: the total padding, smaller half first.
    def pads(size):
        out = -(-size // 2)
        total = max((out - 1) * 2 + 3 - size, 0)
        return total // 2, total - total // 2

    top, bottom = pads(n)
    left, right = pads(n + 1)
    x = F.pad(_t(v["x"]), (left, right, top, bottom))
    return F.conv2d(x, _t(v["w"]), stride=2).numpy()


def _conv2d_grouped(g, inp, n):
    x = inp("x", [1, 4, n, n])
    w = inp("w", [6, 2, 3, 2])
    return kiln.conv2d(x, w, padding=(1, 0, 2, 1), dilation=(1, 2), groups=2)


def _conv2d_grouped_ref(v, n):
    x = F.pad(_t(v["x"]), (2, 1, 1, 0))
    return F.conv2d(x, _t(v["w"]), dilation=(1, 2), groups=2).numpy()


def _conv2d_nhwc(g, inp, n):
    return kiln.conv2d(inp("x", [2, n, n, 3]), inp("w", [5, 3, 3, 3]), padding=1, layout="nhwc")


def _conv2d_nhwc_ref(v, n):
    x = _t(v["x"]).permute(0, 3, 1, 2)
    w = _t(v["w"]).permute(0, 3, 1, 2)
    return F.conv2d(x, w, padding=1).permute(0, 2, 3, 1).numpy()


CASES = {
    "conv2d_same_stride2": (_conv2d, _conv2d_ref),
    "conv2d_grouped_dilated": (_conv2d_grouped, _conv2d_grouped_ref),
    "conv2d_nhwc": (_conv2d_nhwc, _conv2d_nhwc_ref),
    "max_pool2d": (
        lambda g, inp, n: kiln.max_pool2d(inp("x", [2, 3, n, n]), kernel=3, stride=2, ceil_mode=True),
        lambda v, n: F.max_pool2d(_t(v["x"]), 3, 2, ceil_mode=True).numpy(),
    ),
    "avg_pool2d": (
        lambda g, inp, n: kiln.avg_pool2d(inp("x", [2, 3, n, n]), kernel=(2, 3), padding=1, count_include_pad=False),
        lambda v, n: F.avg_pool2d(_t(v["x"]), (2, 3), padding=1, count_include_pad=False).numpy(),
    ),
    "global_avg_pool": (
        lambda g, inp, n: kiln.global_avg_pool(inp("x", [2, 3, n, n + 2])),
        lambda v, n: _t(v["x"]).mean(dim=(2, 3), keepdim=True).numpy(),
    ),
    "layer_norm": (
        lambda g, inp, n: kiln.layer_norm(inp("x", [3, n, 8]), inp("scale", [8]), inp("bias", [8])),
        lambda v, n: F.layer_norm(_t(v["x"]), [8], _t(v["scale"]), _t(v["bias"]), eps=1e-5).numpy(),
    ),
    "batch_norm": (
        lambda g, inp, n: kiln.batch_norm(
            inp("x", [2, 4, n, 3]), inp("scale", [4]), inp("bias", [4]), inp("mean", [4]),
            inp("var", [4], low=0.5, high=2.0), epsilon=1e-3,
        ),
        lambda v, n: F.batch_norm(
            _t(v["x"]), _t(v["mean"]), _t(v["var"]), _t(v["scale"]), _t(v["bias"]), eps=1e-3
        ).numpy(),
    ),
    "attention_causal": (
        lambda g, inp, n: kiln.scaled_dot_product_attention(
            inp("q", [2, n, 8]), inp("k", [2, n, 8]), inp("v", [2, n, 4]), causal=True
        ),
        lambda v, n: F.scaled_dot_product_attention(_t(v["q"]), _t(v["k"]), _t(v["v"]), is_causal=True).numpy()
        if hasattr(F, "scaled_dot_product_attention")
        else _attention(v, causal=True),
    ),
    "attention_mask_scale": (
        lambda g, inp, n: kiln.scaled_dot_product_attention(
            inp("q", [2, n, 8]), inp("k", [2, n + 1, 8]), inp("v", [2, n + 1, 4]),
            mask=inp("mask", [n, n + 1], low=-1.0, high=1.0), scale=0.5,
        ),
        lambda v, n: _attention(v, scale=0.5, additive=v["mask"]),
    ),
}


def _attention(v, causal=False, scale=None, additive=None):
    q, k, values = _t(v["q"]), _t(v["k"]), _t(v["v"])
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if additive is not None:
        scores = scores + _t(additive)
    if causal:
        lq, lk = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(lq, lk, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ values).numpy()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_window_op(name, n, rng):
    build, reference = CASES[name]
    graph = kiln.Graph(name)
    inputs = Inputs(graph, rng)
    graph.output("out", build(graph, inputs, n))
    _, ref = compile_and_compare(graph, inputs.values, "f32")
    assert_close(ref["out"], reference(inputs.values, n), "f32", "vs torch")
