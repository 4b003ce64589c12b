"""kiln.nn's layers with Keras's keywords: each layer compiled for the CPU against the
reference interpreter, Dense and Conv2D against numpy/torch with their own parameter
values, and a small CNN built with Sequential."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import Inputs, assert_close, compile_and_compare

nn = kiln.nn

# name: (layer, input shape, input dtype, input range)
LAYERS = {
    "dense": (lambda: nn.Dense(5, activation="gelu"), [3, 7, 6], "f32", (-2, 2)),
    "conv2d": (lambda: nn.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu"), [2, 3, 9, 8], "f32", (-2, 2)),
    "conv2d_nhwc": (lambda: nn.Conv2D(4, 3, layout="nhwc", use_bias=False), [2, 7, 7, 3], "f32", (-2, 2)),
    "max_pool2d": (lambda: nn.MaxPool2D(pool_size=3, strides=2), [2, 3, 9, 9], "f32", (-2, 2)),
    "avg_pool2d": (lambda: nn.AvgPool2D(2, padding="same", count_include_pad=False), [2, 3, 7, 7], "f32", (-2, 2)),
    "batch_norm": (lambda: nn.BatchNormalization(epsilon=1e-3), [2, 4, 5, 5], "f32", (-2, 2)),
    "layer_norm": (lambda: nn.LayerNormalization(), [3, 5, 8], "f32", (-2, 2)),
    "dropout": (lambda: nn.Dropout(0.5), [3, 5], "f32", (-2, 2)),
    "flatten": (lambda: nn.Flatten(), [2, 3, 4, 5], "f32", (-2, 2)),
    "embedding": (lambda: nn.Embedding(input_dim=11, output_dim=4), [3, 5], "i64", (0, 11)),
    "lstm": (lambda: nn.LSTM(6, return_sequences=True), [2, 5, 3], "f32", (-1, 1)),
    "lstm_bidirectional_stacked": (lambda: nn.LSTM(4, layers=2, bidirectional=True), [2, 5, 3], "f32", (-1, 1)),
    "gru": (lambda: nn.GRU(5), [2, 4, 3], "f32", (-1, 1)),
    "multi_head_attention": (lambda: nn.MultiHeadAttention(num_heads=2, key_dim=4, causal=True), [2, 5, 8], "f32", (-1, 1)),
    "activation": (lambda: nn.Activation("hard_swish"), [4, 9], "f32", (-5, 5)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_against_the_reference(name, rng):
    make, shape, dtype, (low, high) = LAYERS[name]
    graph = kiln.Graph(name, seed=7)
    inputs = Inputs(graph, rng)
    graph.output("out", make()(graph, inputs("x", shape, dtype, low, high)))
    compile_and_compare(graph, inputs.values, "f32")


def test_dense_against_numpy_with_its_parameters(rng):
    graph = kiln.Graph("dense", seed=3)
    inputs = Inputs(graph, rng)
    layer = nn.Dense(6, activation="relu", name="fc")
    graph.output("y", layer(graph, inputs("x", [4, 5])))
    assert layer.name == "fc"
    params = graph.param_values()
    x = inputs.values["x"].astype(np.float64)
    expected = np.maximum(x @ params["fc.weight"] + params["fc.bias"], 0)
    got, _ = compile_and_compare(graph, inputs.values, "f32")
    assert_close(got["y"], expected, "f32", "vs numpy")


def test_conv2d_against_torch_with_its_parameters(rng):
    graph = kiln.Graph("conv", seed=4)
    inputs = Inputs(graph, rng)
    graph.output("y", nn.Conv2D(5, 3, padding=1, activation="tanh")(graph, inputs("x", [2, 3, 8, 8])))
    params = graph.param_values()
    (weight_name,) = [n for n in params if n.endswith("weight")]
    (bias_name,) = [n for n in params if n.endswith("bias")]
    expected = torch.tanh(
        F.conv2d(torch.from_numpy(inputs.values["x"]).double(), torch.from_numpy(params[weight_name]).double(),
                 torch.from_numpy(params[bias_name]).double(), padding=1)
    ).numpy()
    got, _ = compile_and_compare(graph, inputs.values, "f32")
    assert_close(got["y"], expected, "f32", "vs torch")


def test_sequential_cnn_against_the_reference(rng):
    graph = kiln.Graph("cnn", seed=11)
    inputs = Inputs(graph, rng)
    model = nn.Sequential(
        nn.Conv2D(8, 3, activation="relu"),
        nn.MaxPool2D(),
        nn.Conv2D(8, 3, activation="relu"),
        nn.Flatten(),
        nn.Dense(16, activation="relu"),
        nn.Dense(10, activation="softmax"),
    )
    graph.output("probabilities", model(graph, inputs("images", [3, 1, 14, 14], low=0, high=1)))
    assert sorted(graph.param_values()) == sorted(
        f"{layer}.{param}" for layer in ("conv2d", "conv2d_1", "dense", "dense_1") for param in ("weight", "bias")
    )
    got, _ = compile_and_compare(graph, inputs.values, "f32")
    np.testing.assert_allclose(got["probabilities"].sum(axis=1), 1.0, rtol=1e-5)


def test_reused_layer_shares_its_parameters(rng):
    graph = kiln.Graph("shared")
    layer = nn.Dense(4)
    x = graph.input("x", [2, 4])
    graph.output("y", layer(graph, layer(graph, x)))
    assert sorted(graph.param_values()) == ["dense.bias", "dense.weight"]


def test_frozen_layer_parameters_are_not_trainable():
    graph = kiln.Graph("frozen")
    layer = nn.Dense(4)
    layer.trainable = False
    assert layer.trainable is False
    graph.output("y", layer(graph, graph.input("x", [2, 3])))
    assert "dense.weight" in graph.ir()


def test_cross_attention_takes_keys_and_values_from_another_sequence(rng):
    graph = kiln.Graph("cross", seed=5)
    inputs = Inputs(graph, rng)
    attention = nn.MultiHeadAttention(num_heads=2, key_dim=3)
    out = attention(graph, inputs("query", [2, 4, 6], low=-1, high=1), inputs("memory", [2, 7, 6], low=-1, high=1))
    assert out.shape == (2, 4, 6)
    graph.output("y", out)
    compile_and_compare(graph, inputs.values, "f32")
