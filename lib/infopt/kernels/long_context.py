"""Long-context memory: what grows like S (the KV cache, a flash kernel's working set) and what grows like S^2 (the
scores a naive attention materializes), in arithmetic for real models and measured on numpy attentions.

`memory_vs_s` tabulates, for a ModelSpec of `infopt.llm.memory`, the KV cache (`infopt.llm.memory.kv_cache_bytes`,
the one home of that formula) beside the S x S scores of one layer. `naive_attention` and `chunked_attention` are
the two numpy attentions; `peak_bytes` measures their peak allocation with tracemalloc (numpy reports its buffers
to it), so `measure_peak_vs_s` shows chunked ~ S and naive ~ S^2 on this machine.
"""
from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from infopt.llm.memory import ModelSpec, dtype_bytes, kv_cache_bytes
from infopt.llm.paged_blocks import checked_int

__all__ = ["scores_bytes", "memory_vs_s", "naive_attention", "chunked_attention", "peak_bytes",
           "measure_peak_vs_s"]



def scores_bytes(S: int, n_heads: int, dtype_bytes: float) -> int:
    """Bytes of the S x S attention scores of `n_heads` heads (one layer, one sequence) that a naive attention
    materializes: S * S * n_heads * dtype_bytes."""
    S, n_heads = checked_int(S, "S", 1), checked_int(n_heads, "n_heads", 1)
    if not isinstance(dtype_bytes, (int, float)) or isinstance(dtype_bytes, bool) or dtype_bytes <= 0:
        raise ValueError(f"dtype_bytes must be a positive number (bytes per element, 2 for fp16), got "
                         f"{dtype_bytes!r}")
    return int(S * S * n_heads * dtype_bytes)


def memory_vs_s(spec: ModelSpec, lengths: Sequence[int], dtype: str = "fp16") -> list[dict[str, Any]]:
    """One row per context length S: the KV cache of one sequence (all layers, `kv_cache_bytes`), the S x S scores
    of one layer (all heads) a naive attention holds, and a flash kernel's extra memory for that layer (the fp32
    row log-sum-exp it keeps for the backward pass: n_heads * S * 4). Bytes, as ints."""
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"expected a ModelSpec (e.g. infopt.llm.memory.MODELS['Llama 3 8B']), got "
                        f"{type(spec).__name__}")
    b = dtype_bytes(dtype)
    rows = []
    for S in lengths:
        S = checked_int(S, "each length", 1)
        rows.append({"S": S, "kv_cache_bytes": int(kv_cache_bytes(spec, S, dtype)),
                     "naive_scores_bytes": scores_bytes(S, spec.n_heads, b),
                     "flash_extra_bytes": spec.n_heads * S * 4})
    return rows


def _check_qkv(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not isinstance(a, np.ndarray) or a.ndim != 2:
            raise ValueError(f"{name} must be a 2-D numpy array [S, D], got {getattr(a, 'shape', type(a).__name__)}")
    if k.shape[0] != v.shape[0] or q.shape[1] != k.shape[1]:
        raise ValueError(f"q [Sq, D], k [Sk, D] and v [Sk, Dv] disagree: got q {q.shape}, k {k.shape}, v {v.shape}")


def naive_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(D)) v for q [Sq, D], k [Sk, D], v [Sk, Dv], materializing the Sq x Sk scores
    (memory ~ S^2)."""
    _check_qkv(q, k, v)
    scores = q @ k.T / np.sqrt(q.shape[1])
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores @ v


def chunked_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, chunk: int) -> np.ndarray:
    """The same attention flash-style: `chunk` queries at a time, an online softmax over `chunk`-key blocks, so the
    largest temporary is chunk x chunk and memory grows like S * D (the output), never S x S."""
    _check_qkv(q, k, v)
    chunk = checked_int(chunk, "chunk", 1)
    sq, d = q.shape
    scale = 1.0 / np.sqrt(d)
    out = np.empty((sq, v.shape[1]), dtype=np.result_type(q, k, v))
    for i in range(0, sq, chunk):
        qi = q[i:i + chunk] * scale
        m = np.full(qi.shape[0], -np.inf)
        l = np.zeros(qi.shape[0])
        acc = np.zeros((qi.shape[0], v.shape[1]))
        for j in range(0, k.shape[0], chunk):
            s = qi @ k[j:j + chunk].T
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            s -= m_new[:, None]
            np.exp(s, out=s)
            l = alpha * l + s.sum(axis=1)
            acc *= alpha[:, None]
            acc += s @ v[j:j + chunk]
            m = m_new
        out[i:i + chunk] = acc / l[:, None]
    return out


def peak_bytes(fn: Callable[..., Any], *args: Any) -> int:
    """Peak bytes allocated (tracemalloc, which numpy reports its buffers to) while `fn(*args)` runs, above what was
    allocated when it started; the result is included (it is allocated during the call)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    started = tracemalloc.is_tracing()
    if not started:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn(*args)
        return int(tracemalloc.get_traced_memory()[1] - base)
    finally:
        if not started:
            tracemalloc.stop()


def measure_peak_vs_s(lengths: Sequence[int], D: int = 32, chunk: int = 64, seed: int = 0) -> list[dict[str, int]]:
    """One row per S: {S, naive_peak, chunked_peak} bytes (float64 q, k, v [S, D], made before measuring)."""
    D, chunk = checked_int(D, "D", 1), checked_int(chunk, "chunk", 1)
    rng = np.random.default_rng(seed)
    rows = []
    for S in lengths:
        S = checked_int(S, "each length", 1)
        q, k, v = (rng.standard_normal((S, D)) for _ in range(3))
        rows.append({"S": S, "naive_peak": peak_bytes(naive_attention, q, k, v),
                     "chunked_peak": peak_bytes(chunked_attention, q, k, v, chunk)})
    return rows
