"""What the twins share: loading kiln's parameter layouts into PyTorch layers,
and kiln's "same" padding, which puts the odd pixel after (TensorFlow's rule)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def load_dense(layer: nn.Linear, params, name):
    """A kiln Dense holds weight [in, out]; nn.Linear holds [out, in]."""
    layer.weight.data.copy_(params[f"{name}.weight"].t())
    if layer.bias is not None:
        layer.bias.data.copy_(params[f"{name}.bias"])


def load_conv(layer: nn.Conv2d, params, name):
    """kiln's NCHW filters are OIHW, as PyTorch's."""
    layer.weight.data.copy_(params[f"{name}.weight"])
    if layer.bias is not None:
        layer.bias.data.copy_(params[f"{name}.bias"])


def load_batch_norm(layer: nn.BatchNorm2d, params, name):
    for field in ("weight", "bias", "running_mean", "running_var"):
        getattr(layer, field).data.copy_(params[f"{name}.{field}"])


def load_layer_norm(layer: nn.LayerNorm, params, name):
    layer.weight.data.copy_(params[f"{name}.weight"])
    layer.bias.data.copy_(params[f"{name}.bias"])


def same_pads(size, kernel, stride):
    """kiln's samePadding (frontend/Padding.cpp): (before, after) on one axis."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class SameConv2d(nn.Conv2d):
    """nn.Conv2d with kiln's Padding::same(): symmetric padding when the total
    is even (the conv pads), an explicit F.pad first when it is odd."""

    def __init__(self, in_channels, out_channels, kernel, stride=1, bias=True, input_size=None):
        top, bottom = same_pads(input_size, kernel, stride)
        self.explicit = None if top == bottom else (top, bottom, top, bottom)
        super().__init__(in_channels, out_channels, kernel, stride=stride,
                         padding=top if top == bottom else 0, bias=bias)

    def forward(self, x):
        if self.explicit is not None:
            x = F.pad(x, self.explicit)
        return super().forward(x)
