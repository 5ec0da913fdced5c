"""The pre-LN transformer block: matches an independent numpy formulation, exports to plain ONNX ops."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from infopt.models import TransformerBlock, transformer_block_onnx


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _reference(block, x):
    """The block recomputed in numpy float64 from its parameters."""
    p = {k: v.detach().double().numpy() for k, v in block.state_dict().items()}
    lin = lambda t, n: t @ p[f"{n}.weight"].T + p[f"{n}.bias"]  # noqa: E731
    b, n, d = x.shape
    hd = d // block.heads
    h = _ln(x, p["ln1.weight"], p["ln1.bias"])
    q, k, v = (lin(h, s).reshape(b, n, block.heads, hd).transpose(0, 2, 1, 3) for s in "qkv")
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    x = x + lin((a @ v).transpose(0, 2, 1, 3).reshape(b, n, d), "proj")
    h = lin(_ln(x, p["ln2.weight"], p["ln2.bias"]), "fc1")
    erf = np.vectorize(math.erf)
    return x + lin(0.5 * h * (1 + erf(h / math.sqrt(2))), "fc2")


@pytest.mark.parametrize("dim,heads", [(64, 4), (32, 2)])
def test_block_matches_numpy_reference(dim, heads):
    rng = np.random.default_rng()
    block = TransformerBlock(dim=dim, heads=heads, seed=int(rng.integers(100)))
    x = rng.standard_normal((2, 5, dim))
    with torch.no_grad():
        got = block(torch.from_numpy(x).float()).double().numpy()
    np.testing.assert_allclose(got, _reference(block, x), rtol=1e-4, atol=1e-4)


def test_export_has_only_plain_ops():
    ops = {n.op_type for n in transformer_block_onnx().graph.node}
    assert {"MatMul", "Softmax", "LayerNormalization", "Erf", "Transpose", "Reshape"} <= ops
    assert not ops & {"Shape", "Gather", "Expand", "ScaledDotProductAttention"}


def test_bad_heads():
    with pytest.raises(ValueError, match="divisible"):
        TransformerBlock(dim=30, heads=4)
