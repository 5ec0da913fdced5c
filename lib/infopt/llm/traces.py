"""Seeded request traces for the serving engines: Poisson arrivals, mixed prompt and output lengths.

Prompts are cut from the tiny models' training corpus (``infopt.llm.train.corpus_text``) so the model sees real
text; the same seed always gives the same trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Request:
    """One request: it arrives at ``arrival_s`` (seconds from the start of the trace) with ``prompt_ids`` and asks
    for ``max_new_tokens`` generated tokens."""

    req_id: int
    arrival_s: float
    prompt_ids: list[int]
    max_new_tokens: int


@lru_cache(maxsize=4)
def _corpus_ids(text: str | None) -> tuple[int, ...]:
    if text is None:
        from .train import corpus_text

        text = corpus_text()
    return tuple(text.encode("utf-8"))


def _check_range(name: str, r: tuple[int, int], low: int) -> tuple[int, int]:
    lo, hi = (int(x) for x in r)
    if not low <= lo <= hi:
        raise ValueError(f"{name} must be (lo, hi) with {low} <= lo <= hi, got {r!r}")
    return lo, hi


def poisson_trace(n: int, rate_per_s: float, seed: int = 0, prompt_len: tuple[int, int] = (16, 96),
                  output_len: tuple[int, int] = (8, 64), text: str | None = None) -> list[Request]:
    """``n`` requests with exponential inter-arrival times of mean ``1 / rate_per_s`` (a Poisson process; the
    first arrives after one gap), prompt and output lengths uniform on the inclusive ranges, prompts a BOS token
    then ``prompt_len - 1`` bytes cut at a random place of ``text`` (default: the training corpus).
    ``rate_per_s = inf`` puts every arrival at 0 (an offline batch)."""
    from .tokenizer import BOS

    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not rate_per_s > 0:
        raise ValueError(f"rate_per_s must be > 0 (requests per second), got {rate_per_s}")
    p_lo, p_hi = _check_range("prompt_len", prompt_len, 2)
    o_lo, o_hi = _check_range("output_len", output_len, 1)
    corpus = _corpus_ids(text)
    if len(corpus) < p_hi:
        raise ValueError(f"the text has {len(corpus)} bytes, fewer than the longest prompt ({p_hi}); "
                         "pass a longer text")
    rng = np.random.default_rng(seed)
    gaps = np.zeros(n) if np.isinf(rate_per_s) else rng.exponential(1.0 / rate_per_s, n)
    arrivals = np.cumsum(gaps)
    reqs = []
    for i in range(n):
        plen = int(rng.integers(p_lo, p_hi + 1))
        start = int(rng.integers(0, len(corpus) - plen + 2))
        prompt = [BOS, *corpus[start:start + plen - 1]]
        reqs.append(Request(req_id=i, arrival_s=float(arrivals[i]), prompt_ids=prompt,
                            max_new_tokens=int(rng.integers(o_lo, o_hi + 1))))
    return reqs
