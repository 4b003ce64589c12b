"""kiln.onnx.load: a PyTorch model exported to ONNX, imported, compiled for the CPU and run
against PyTorch's own output."""

import numpy as np
import pytest
import torch

import kiln
from conftest import assert_close


class _SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=-1)


def test_onnx_model_against_pytorch(tmp_path, rng):
    torch.manual_seed(0)
    module = _SmallCnn().eval()
    path = tmp_path / "cnn.onnx"
    example = torch.zeros(1, 3, 8, 8)
    torch.onnx.export(module, example, str(path), input_names=["images"], output_names=["probabilities"],
                      dynamic_axes={"images": {0: "batch"}}, opset_version=17)
    graph = kiln.onnx.load(str(path), shapes={"images": [3, 3, 8, 8]})
    assert "images" in graph.ir()
    model = kiln.compile(graph, target="cpu")
    x = rng.uniform(-1, 1, (3, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    assert_close(model(images=x)["probabilities"], expected, "f32")


def test_onnx_errors_are_kiln_errors(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(kiln.Error, match="missing.onnx"):
        kiln.onnx.load(str(missing))
