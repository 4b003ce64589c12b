"""Twin of examples/models/TransformerBlock.cpp: a pre-LayerNorm GPT-2-small
decoder block (768 wide, 12 causal heads, GELU-tanh MLP of 3072) over 128
tokens: h = x + attn(ln_1(x)); y = h + mlp_proj(gelu(mlp_fc(ln_2(h))))."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import load_dense, load_layer_norm

NAME = "transformer"
DEFAULT_BATCH = 1  # kiln's registry default
OUTPUT = "y"
WIDTH, HEADS, MLP, TOKENS = 768, 12, 3072, 128
_SCOPE = "transformer_block"


def param_shapes():
    shapes = {}
    for norm in ("ln_1", "ln_2"):
        shapes[f"{_SCOPE}.{norm}.weight"] = [WIDTH]
        shapes[f"{_SCOPE}.{norm}.bias"] = [WIDTH]
    for projection in ("query", "key", "value", "output"):
        shapes[f"{_SCOPE}.attn.{projection}.weight"] = [WIDTH, WIDTH]
        shapes[f"{_SCOPE}.attn.{projection}.bias"] = [WIDTH]
    shapes.update({f"{_SCOPE}.mlp_fc.weight": [WIDTH, MLP], f"{_SCOPE}.mlp_fc.bias": [MLP],
                   f"{_SCOPE}.mlp_proj.weight": [MLP, WIDTH], f"{_SCOPE}.mlp_proj.bias": [WIDTH]})
    return shapes


def input_specs(batch):
    return {"x": ([batch, TOKENS, WIDTH], "float")}


def _attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0: its fused kernels
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    length = q.shape[-2]
    mask = torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.ln_2 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH)
        self.value = nn.Linear(WIDTH, WIDTH)
        self.output = nn.Linear(WIDTH, WIDTH)
        self.mlp_fc = nn.Linear(WIDTH, MLP)
        self.mlp_proj = nn.Linear(MLP, WIDTH)

    def load_kiln(self, params):
        load_layer_norm(self.ln_1, params, f"{_SCOPE}.ln_1")
        load_layer_norm(self.ln_2, params, f"{_SCOPE}.ln_2")
        for projection in ("query", "key", "value", "output"):
            load_dense(getattr(self, projection), params, f"{_SCOPE}.attn.{projection}")
        load_dense(self.mlp_fc, params, f"{_SCOPE}.mlp_fc")
        load_dense(self.mlp_proj, params, f"{_SCOPE}.mlp_proj")

    def _split(self, x):  # [B, L, H*D] -> [B, H, L, D]
        return x.view(x.shape[0], x.shape[1], HEADS, WIDTH // HEADS).transpose(1, 2)

    def forward(self, x):
        a = self.ln_1(x)
        attended = _attention(self._split(self.query(a)), self._split(self.key(a)),
                              self._split(self.value(a)))
        h = x + self.output(attended.transpose(1, 2).reshape(x.shape))
        return h + self.mlp_proj(F.gelu(self.mlp_fc(self.ln_2(h)), approximate="tanh"))
