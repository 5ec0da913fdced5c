"""Long-context memory (infopt.kernels.long_context): the scores/KV arithmetic against infopt.llm.memory, chunked
(flash-style) numpy attention equal to the naive one, and their measured peaks: chunked ~ S, naive ~ S^2."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.kernels.long_context import (
    chunked_attention, measure_peak_vs_s, memory_vs_s, naive_attention, peak_bytes, scores_bytes,
)
from infopt.llm.memory import MODELS, kv_cache_bytes


def reference(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("sq,sk,chunk", [(100, 77, 13), (64, 64, 64), (1, 9, 4), (50, 50, 1), (30, 200, 256)])
def test_chunked_attention_equals_naive(sq, sk, chunk):
    rng = np.random.default_rng(sq + sk)
    q, k, v = rng.standard_normal((sq, 16)) * 3, rng.standard_normal((sk, 16)), rng.standard_normal((sk, 8))
    naive = naive_attention(q, k, v)
    assert np.abs(naive - reference(q, k, v)).max() < 1e-12
    assert np.abs(chunked_attention(q, k, v, chunk) - naive).max() < 1e-10


def test_chunked_peak_grows_like_s_and_naive_like_s_squared():
    small, big = measure_peak_vs_s([256, 1024], D=32, chunk=64)
    assert small["S"] == 256 and big["S"] == 1024
    assert big["chunked_peak"] / small["chunked_peak"] < 6
    assert big["naive_peak"] / small["naive_peak"] > 10
    assert big["naive_peak"] >= 1024 * 1024 * 8  # at least the float64 S x S scores
    assert big["chunked_peak"] < 1024 * 1024 * 8 / 4


def test_peak_bytes_counts_what_a_call_allocates():
    assert peak_bytes(np.zeros, 1_000_000) >= 8_000_000
    assert peak_bytes(lambda: None) < 10_000
    with pytest.raises(TypeError, match="callable"):
        peak_bytes(3)


def test_memory_vs_s_uses_the_kv_formula_and_the_s_squared_scores():
    spec = MODELS["Llama 3 8B"]
    rows = memory_vs_s(spec, [4096, 32768])
    for row in rows:
        assert row["kv_cache_bytes"] == kv_cache_bytes(spec, row["S"], "fp16")
        assert row["naive_scores_bytes"] == row["S"] ** 2 * spec.n_heads * 2
    assert rows[1]["naive_scores_bytes"] == 64 * rows[0]["naive_scores_bytes"]  # 8x S -> 64x
    assert rows[1]["kv_cache_bytes"] == 8 * rows[0]["kv_cache_bytes"]
    assert rows[1]["flash_extra_bytes"] == 8 * rows[0]["flash_extra_bytes"]
    # Llama 3 8B at 128K, fp16: 32 heads x 128K^2 x 2 bytes = 1 TiB of scores per layer vs a 16 GiB KV cache
    big = memory_vs_s(spec, [131072])[0]
    assert big["naive_scores_bytes"] == 2 ** 40 and big["kv_cache_bytes"] == 16 * 2 ** 30
    assert memory_vs_s(spec, [1024], dtype="fp32")[0]["naive_scores_bytes"] == 1024 ** 2 * 32 * 4


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="S must be an int >= 1"):
        scores_bytes(0, 8, 2)
    with pytest.raises(ValueError, match="dtype_bytes must be a positive number"):
        scores_bytes(8, 8, "fp16")
    with pytest.raises(TypeError, match="ModelSpec"):
        memory_vs_s("Llama 3 8B", [8])
    with pytest.raises(ValueError, match="dtype must be one of"):
        memory_vs_s(MODELS["Llama 3 8B"], [8], dtype="fp12")
    x = np.zeros((4, 8))
    with pytest.raises(ValueError, match="chunk must be an int >= 1"):
        chunked_attention(x, x, x, 0)
    with pytest.raises(ValueError, match="disagree"):
        chunked_attention(x, np.zeros((4, 3)), np.zeros((4, 8)), 2)
    with pytest.raises(ValueError, match="2-D numpy array"):
        naive_attention(x[None], x, x)
