"""Twin of examples/models/FashionMnistCnn.cpp: Conv(32) Pool Conv(64) Pool
Conv(64) Flatten Dense(64, relu) Dense(10, softmax), valid padding, NCHW."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import load_conv, load_dense

NAME = "cnn"
DEFAULT_BATCH = 64  # kiln's registry default
OUTPUT = "probabilities"


def param_shapes():
    return {
        "conv2d.weight": [32, 1, 3, 3], "conv2d.bias": [32],
        "conv2d_1.weight": [64, 32, 3, 3], "conv2d_1.bias": [64],
        "conv2d_2.weight": [64, 64, 3, 3], "conv2d_2.bias": [64],
        "dense.weight": [576, 64], "dense.bias": [64],
        "dense_1.weight": [64, 10], "dense_1.bias": [10],
    }


def input_specs(batch):
    return {"images": ([batch, 1, 28, 28], "float")}


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.fc1 = nn.Linear(576, 64)
        self.fc2 = nn.Linear(64, 10)

    def load_kiln(self, params):
        load_conv(self.conv1, params, "conv2d")
        load_conv(self.conv2, params, "conv2d_1")
        load_conv(self.conv3, params, "conv2d_2")
        load_dense(self.fc1, params, "dense")
        load_dense(self.fc2, params, "dense_1")

    def forward(self, images):
        x = F.max_pool2d(F.relu(self.conv1(images)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(F.relu(self.conv3(x)), 1)
        x = F.relu(self.fc1(x))
        return F.softmax(self.fc2(x), dim=-1)
