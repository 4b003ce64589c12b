#!/usr/bin/python3
"""Writes the small ONNX models of kiln-onnx.kir: model.onnx (Conv, Relu, MaxPool with a
dynamic batch, Flatten, Gemm), bad-op.onnx (two ops kiln lacks), an input x.npy for batch 2.
Usage: make_onnx_model.py DIR"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)


def init(name, array):
    tensor = numpy_helper.from_array(array.astype(array.dtype))
    tensor.name = name
    return tensor


graph = helper.make_graph(
    [helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c"], ["r"]),
     helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
     helper.make_node("Flatten", ["p"], ["f"]),
     helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], transB=1)],
    "tiny",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 6, 6])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 5])],
    [init("conv.weight", rng.standard_normal((4, 3, 3, 3), dtype=np.float32)),
     init("conv.bias", rng.standard_normal(4, dtype=np.float32)),
     init("fc.weight", rng.standard_normal((5, 36), dtype=np.float32)),
     init("fc.bias", rng.standard_normal(5, dtype=np.float32))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.save(model, f"{out}/model.onnx")

bad = helper.make_graph(
    [helper.make_node("Hardmax", ["x"], ["h"], name="hard"),
     helper.make_node("Einsum", ["h", "h"], ["y"], name="sum", equation="ij,ij->i")],
    "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
model = helper.make_model(bad, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, f"{out}/bad-op.onnx")

np.save(f"{out}/x.npy", rng.standard_normal((2, 3, 6, 6), dtype=np.float32))
