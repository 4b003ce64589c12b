"""kiln's nn layers with Keras's keywords: `kiln.nn.Dense(64, activation="relu")(graph, x)`.
The layers are kiln's C++ layers (frontend/nn); Sequential and Activation are Python."""

from ._kiln.nn import (  # noqa: F401
    AvgPool2D,
    BatchNorm,
    Conv2D,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    GRU,
    Layer,
    LayerNorm,
    LSTM,
    MaxPool2D,
    MultiHeadAttention,
    apply_activation,
)

# Keras's longer names.
BatchNormalization = BatchNorm
LayerNormalization = LayerNorm
MaxPooling2D = MaxPool2D
AveragePooling2D = AvgPool2D


class Activation:
    """Keras's Activation layer: applies "relu", "gelu", "softmax", ... (None: identity)."""

    def __init__(self, activation):
        self.activation = activation

    def __call__(self, graph, x):
        return apply_activation(x, self.activation)


class Sequential:
    """Layers applied one after another: `Sequential(Conv2D(...), MaxPool2D(), ...)(graph, x)`.
    As in Keras (and kiln's C++ nn::Sequential) the layers are named in the enclosing scope."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def add(self, layer):
        self.layers.append(layer)
        return layer

    def __call__(self, graph, x):
        for layer in self.layers:
            x = layer(graph, x)
        return x
