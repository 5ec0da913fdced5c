"""A small pre-LayerNorm transformer block, attention written out with matmul and softmax."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ir import Graph


def TransformerBlock(dim: int = 64, heads: int = 4, mlp_ratio: int = 4, seed: int = 0):
    """A pre-LN block ``x + MHA(LN(x))`` then ``x + MLP(LN(x))`` (GELU), seeded, in eval mode; input (B,T,dim).

    Attention is spelled out (matmul, scale, softmax, matmul) so every step shows up as a graph node,
    instead of one fused ``scaled_dot_product_attention`` op.
    """
    import torch
    import torch.nn as nn

    if dim % heads:
        raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")

    class _Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dim, self.heads, self.head_dim = dim, heads, dim // heads
            self.ln1 = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, mlp_ratio * dim)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(mlp_ratio * dim, dim)

        def _split(self, t, b: int, n: int):
            return t.reshape(b, n, self.heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)

        def forward(self, x):
            b, n = int(x.shape[0]), int(x.shape[1])
            h = self.ln1(x)
            q, k, v = self._split(self.q(h), b, n), self._split(self.k(h), b, n), self._split(self.v(h), b, n)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            attn = torch.matmul(torch.softmax(scores, dim=-1), v)
            x = x + self.proj(attn.transpose(1, 2).reshape(b, n, self.dim))
            return x + self.fc2(self.act(self.fc1(self.ln2(x))))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = _Block()
        for ln in (block.ln1, block.ln2):  # non-trivial affine parameters
            nn.init.uniform_(ln.weight, 0.5, 1.5)
            nn.init.normal_(ln.bias, 0.0, 0.1)
    return block.eval()


def qkv_projections(tokens: int, hidden: int, seed: int = 0) -> Graph:
    """The Q, K and V projections of one attention layer as an IR graph: three MatMuls of one (tokens, hidden)
    input ``x`` by seeded (hidden, hidden) weights, outputs ``q``, ``k``, ``v`` (what HorizontalFusion merges)."""
    import numpy as np

    from ..ir import Graph, TensorType

    rng = np.random.default_rng(seed)
    g = Graph("qkv")
    x = g.add_input("x", TensorType((tokens, hidden)))
    g.outputs = [g.add_node("MatMul", [x, g.add_initializer(f"w_{c}", rng.standard_normal((hidden, hidden)).astype(np.float32))],
                            outputs=[c]).outputs[0] for c in "qkv"]
    return g
