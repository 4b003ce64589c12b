"""Twin of examples/models/Mlp.cpp: Dense(256, relu) Dense(128, relu)
Dense(10, softmax) on 784 features."""
import torch.nn as nn
import torch.nn.functional as F

from .common import load_dense

NAME = "mlp"
DEFAULT_BATCH = 64  # kiln's registry default
OUTPUT = "probabilities"
_WIDTHS = [784, 256, 128, 10]
_LAYERS = ["dense", "dense_1", "dense_2"]


def param_shapes():
    shapes = {}
    for name, fan_in, fan_out in zip(_LAYERS, _WIDTHS, _WIDTHS[1:]):
        shapes[f"{name}.weight"] = [fan_in, fan_out]
        shapes[f"{name}.bias"] = [fan_out]
    return shapes


def input_specs(batch):
    return {"x": ([batch, 784], "float")}


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(_WIDTHS, _WIDTHS[1:]))

    def load_kiln(self, params):
        for layer, name in zip(self.layers, _LAYERS):
            load_dense(layer, params, name)

    def forward(self, x):
        x = F.relu(self.layers[0](x))
        x = F.relu(self.layers[1](x))
        return F.softmax(self.layers[2](x), dim=-1)
