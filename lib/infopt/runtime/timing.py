"""Interleaved timing: run variants round-robin in one process and keep every sample, so noise hits all alike.

On a shared, noisy machine a variant timed alone measures the neighbours as much as itself; timing
the variants in turn, many rounds, and comparing medians (or the per-round ratio) is what makes a
ratio between two kernels repeatable.
"""
from __future__ import annotations

import time
from typing import Callable, Mapping

import numpy as np


def interleaved(fns: Mapping[str, Callable[[], object]], repeats: int = 7, warmup: int = 1,
                budget_s: float | None = None) -> dict[str, list[float]]:
    """Seconds per call of each function, sampled round-robin ``repeats`` times after ``warmup`` calls.

    ``budget_s`` caps the time spent: a function whose single call takes longer than
    ``budget_s / repeats`` is sampled fewer times (at least once).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    first: dict[str, float] = {}
    for name, fn in fns.items():
        for _ in range(max(0, warmup)):
            t = time.perf_counter()
            fn()
            first[name] = time.perf_counter() - t
    samples: dict[str, list[float]] = {n: [] for n in fns}
    for r in range(repeats):
        for name, fn in fns.items():
            if r > 0 and budget_s is not None and first.get(name, 0.0) * (r + 1) > budget_s:
                continue
            t = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t)
    return samples


def median_ratio(samples: Mapping[str, list[float]], num: str, den: str) -> float:
    """median(time[num]) / median(time[den]): how many times faster ``den`` is than ``num``."""
    for n in (num, den):
        if not samples.get(n):
            raise ValueError(f"no samples for {n!r}; have {sorted(samples)}")
    return float(np.median(samples[num]) / np.median(samples[den]))


def paired_ratio(samples: Mapping[str, list[float]], num: str, den: str) -> float:
    """Median over rounds of time[num] / time[den] from the same round (noise that hits a round hits both)."""
    a, b = samples.get(num, []), samples.get(den, [])
    n = min(len(a), len(b))
    if n == 0:
        raise ValueError(f"no paired samples for {num!r} and {den!r}")
    return float(np.median(np.asarray(a[:n]) / np.asarray(b[:n])))
