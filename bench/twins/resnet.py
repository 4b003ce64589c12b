"""Twin of examples/models/ResNetStyle.cpp: a 3x3 conv stem and three stages
of two basic blocks (16, 32, 64 wide; stages 2 and 3 halve H and W, with a
1x1 conv + batch norm shortcut), global average pool, Dense(10, softmax), on
32x32x3. Convs have no bias and "same" padding; batch norm in inference mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import SameConv2d, load_batch_norm, load_conv, load_dense

NAME = "resnet"
DEFAULT_BATCH = 8  # kiln's registry default
OUTPUT = "probabilities"
_WIDTHS = [16, 32, 64]
_BLOCKS = 2
_IMAGE = 32


def _bn_shapes(name, channels):
    return {f"{name}.{field}": [channels]
            for field in ("weight", "bias", "running_mean", "running_var")}


def _blocks():
    """(kiln scope, in channels, width, stride, input size) of every block."""
    out, channels, size = [], _WIDTHS[0], _IMAGE
    for stage, width in enumerate(_WIDTHS, start=1):
        for block in range(_BLOCKS):
            stride = 2 if stage > 1 and block == 0 else 1
            out.append((f"layer{stage}.{block}", channels, width, stride, size))
            channels, size = width, -(-size // stride)
    return out


def param_shapes():
    shapes = {"conv1.weight": [_WIDTHS[0], 3, 3, 3], **_bn_shapes("bn1", _WIDTHS[0])}
    for scope, cin, width, stride, _ in _blocks():
        shapes[f"{scope}.conv1.weight"] = [width, cin, 3, 3]
        shapes.update(_bn_shapes(f"{scope}.bn1", width))
        shapes[f"{scope}.conv2.weight"] = [width, width, 3, 3]
        shapes.update(_bn_shapes(f"{scope}.bn2", width))
        if stride != 1 or cin != width:
            shapes[f"{scope}.downsample.0.weight"] = [width, cin, 1, 1]
            shapes.update(_bn_shapes(f"{scope}.downsample.1", width))
    shapes["fc.weight"] = [_WIDTHS[-1], 10]
    shapes["fc.bias"] = [10]
    return shapes


def input_specs(batch):
    return {"images": ([batch, 3, _IMAGE, _IMAGE], "float")}


class BasicBlock(nn.Module):
    def __init__(self, cin, width, stride, size):
        super().__init__()
        self.conv1 = SameConv2d(cin, width, 3, stride, bias=False, input_size=size)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = SameConv2d(width, width, 3, 1, bias=False, input_size=-(-size // stride))
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = None
        if stride != 1 or cin != width:
            self.downsample = nn.Sequential(
                SameConv2d(cin, width, 1, stride, bias=False, input_size=size),
                nn.BatchNorm2d(width))

    def load_kiln(self, params, scope):
        load_conv(self.conv1, params, f"{scope}.conv1")
        load_batch_norm(self.bn1, params, f"{scope}.bn1")
        load_conv(self.conv2, params, f"{scope}.conv2")
        load_batch_norm(self.bn2, params, f"{scope}.bn2")
        if self.downsample is not None:
            load_conv(self.downsample[0], params, f"{scope}.downsample.0")
            load_batch_norm(self.downsample[1], params, f"{scope}.downsample.1")

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(y + shortcut)


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = SameConv2d(3, _WIDTHS[0], 3, 1, bias=False, input_size=_IMAGE)
        self.bn1 = nn.BatchNorm2d(_WIDTHS[0])
        self.blocks = nn.ModuleList(BasicBlock(cin, width, stride, size)
                                    for _, cin, width, stride, size in _blocks())
        self.fc = nn.Linear(_WIDTHS[-1], 10)

    def load_kiln(self, params):
        load_conv(self.conv1, params, "conv1")
        load_batch_norm(self.bn1, params, "bn1")
        for block, (scope, *_rest) in zip(self.blocks, _blocks()):
            block.load_kiln(params, scope)
        load_dense(self.fc, params, "fc")

    def forward(self, images):
        x = F.relu(self.bn1(self.conv1(images)))
        for block in self.blocks:
            x = block(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return F.softmax(self.fc(x), dim=-1)
