"""Twin of examples/models/VggTransfer.cpp: VGG16's convolutional base (13
convs, same padding, relu, 5 max pools) and a Dense(256, relu) Dense(10,
softmax) head on 224x224x3."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import load_conv, load_dense

NAME = "vgg"
DEFAULT_BATCH = 1  # kiln's registry default
OUTPUT = "probabilities"
_WIDTHS = [64, 128, 256, 512, 512]
_CONVS = [2, 2, 3, 3, 3]


def _convs():
    """(kiln name, in channels, out channels) of every conv, in order."""
    out, channels = [], 3
    for block, (width, count) in enumerate(zip(_WIDTHS, _CONVS), start=1):
        for conv in range(1, count + 1):
            out.append((f"block{block}_conv{conv}", channels, width))
            channels = width
    return out


def param_shapes():
    shapes = {}
    for name, cin, cout in _convs():
        shapes[f"{name}.weight"] = [cout, cin, 3, 3]
        shapes[f"{name}.bias"] = [cout]
    shapes.update({"fc1.weight": [512 * 7 * 7, 256], "fc1.bias": [256],
                   "predictions.weight": [256, 10], "predictions.bias": [10]})
    return shapes


def input_specs(batch):
    return {"images": ([batch, 3, 224, 224], "float")}


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        # 3x3 "same" at stride 1 pads 1 on every side: a plain padded conv.
        self.convs = nn.ModuleList(nn.Conv2d(cin, cout, 3, padding=1) for _, cin, cout in _convs())
        self.fc1 = nn.Linear(512 * 7 * 7, 256)
        self.fc2 = nn.Linear(256, 10)

    def load_kiln(self, params):
        for layer, (name, _, _) in zip(self.convs, _convs()):
            load_conv(layer, params, name)
        load_dense(self.fc1, params, "fc1")
        load_dense(self.fc2, params, "predictions")

    def forward(self, images):
        x = images
        index = 0
        for count in _CONVS:
            for _ in range(count):
                x = F.relu(self.convs[index](x))
                index += 1
            x = F.max_pool2d(x, 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.softmax(self.fc2(x), dim=-1)
