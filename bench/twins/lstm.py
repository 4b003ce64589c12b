"""Twin of examples/models/LstmLanguageModel.cpp: Embedding(1000, 128)
LSTM(128, every step) Dense(1000, softmax) over 20 tokens. kiln stacks the
gates as input, forget, candidate, output: PyTorch's i, f, g, o order."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import load_dense

NAME = "lstm"
DEFAULT_BATCH = 8  # kiln's registry default
OUTPUT = "probabilities"
VOCABULARY, EMBEDDING, UNITS, STEPS = 1000, 128, 128, 20


def param_shapes():
    return {
        "embedding.weight": [VOCABULARY, EMBEDDING],
        "lstm.weight": [EMBEDDING, 4 * UNITS],
        "lstm.recurrent_weight": [UNITS, 4 * UNITS],
        "lstm.bias": [4 * UNITS],
        "dense.weight": [UNITS, VOCABULARY],
        "dense.bias": [VOCABULARY],
    }


def input_specs(batch):
    return {"tokens": ([batch, STEPS], ("int", VOCABULARY))}


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, EMBEDDING)
        self.lstm = nn.LSTM(EMBEDDING, UNITS, batch_first=True)
        self.fc = nn.Linear(UNITS, VOCABULARY)

    def load_kiln(self, params):
        self.embedding.weight.data.copy_(params["embedding.weight"])
        # kiln: x @ W[in, 4U] + h @ R[U, 4U] + b; PyTorch: W_ih [4U, in], and
        # two biases that add up to kiln's one.
        self.lstm.weight_ih_l0.data.copy_(params["lstm.weight"].t())
        self.lstm.weight_hh_l0.data.copy_(params["lstm.recurrent_weight"].t())
        self.lstm.bias_ih_l0.data.copy_(params["lstm.bias"])
        self.lstm.bias_hh_l0.data.zero_()
        load_dense(self.fc, params, "dense")

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embedding(tokens))
        return F.softmax(self.fc(hidden), dim=-1)
