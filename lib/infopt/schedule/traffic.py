"""Analytic traffic models: bytes a matmul schedule moves between a cache of a given size and the level below,
and bytes an elementwise chain moves fused vs unfused.

The cache simulator (``cachesim``) is exact but replays only small problems; these formulas extend
the same reasoning to N = 1024 and beyond. They count compulsory and capacity misses of a fully
associative cache of ``cache_bytes`` with ``line`` bytes, float32 data (``e = line / 4`` elements per
line), square N x N x N, and ignore conflict misses:

- naive i-j-k: A's row i stays cached across j when it fits; B is walked down a column, so each
  access touches a new line unless ``N`` lines of B fit (then a line serves ``e`` consecutive j).
- interchanged i-k-j: rows of B stream; B is re-read for every i unless all of B fits.
- tiled (tile T per dimension, 3 T^2 floats fitting in the cache): every tile of A and B is read
  N/T times: ``2 N^3 / T`` elements, plus C once.
- packed (BLIS blocking mc x kc x nc): see ``packed_traffic``.
"""
from __future__ import annotations

import math

FLOAT = 4


def _lines(elems: float, line: int) -> float:
    return elems / (line / FLOAT)


def matmul_traffic(schedule: str, n: int, cache_bytes: int, line: int = 64, tile: int | None = None,
                   mc: int = 96, kc: int = 256, nc: int = 1024) -> float:
    """Bytes moved into a cache of ``cache_bytes`` by an n^3 float32 matmul under ``schedule``.

    ``schedule`` is one of naive, interchanged, tiled, packed (the ladder's names); ``tile`` is the
    tiled schedule's tile edge (default: the largest T with 3 T^2 floats in the cache).
    """
    if n < 1 or cache_bytes < line:
        raise ValueError(f"need n >= 1 and cache_bytes >= line; got n={n}, cache_bytes={cache_bytes}")
    n3, n2 = float(n) ** 3, float(n) ** 2
    once = 3 * _lines(n2, line)          # every matrix read once (compulsory)
    if schedule == "naive":
        a = _lines(n2, line) if n * FLOAT * 2 <= cache_bytes // 4 else _lines(n3, line)
        b = _lines(n3, line) if n * line <= cache_bytes // 2 else n3
        lines = a + b + _lines(n2, line)
    elif schedule == "interchanged":
        b = _lines(n2, line) if n2 * FLOAT <= cache_bytes // 2 else _lines(n3, line)
        c = _lines(n2, line) if n * FLOAT * 2 <= cache_bytes // 2 else _lines(n3, line)
        lines = _lines(n2, line) + b + c
    elif schedule == "tiled":
        t = tile or max(1, int(math.sqrt(cache_bytes / (3 * FLOAT))))
        t = min(t, n)
        lines = _lines(2 * n3 / t, line) + _lines(n2, line)
    elif schedule in ("packed", "packed_mt"):
        return packed_traffic(n, cache_bytes, line, mc, kc, nc)
    else:
        raise ValueError(f"unknown schedule {schedule!r}; use naive, interchanged, tiled or packed")
    return max(lines, once) * line


def packed_traffic(n: int, cache_bytes: int, line: int = 64, mc: int = 96, kc: int = 256, nc: int = 1024) -> float:
    """Bytes into a cache for BLIS blocking: the packed B block (kc x nc) is reused across all of M when it fits,
    else it is re-read for every mc row block; A blocks (mc x kc) are read once per nc column block; C is
    read and written once per kc step."""
    n = float(n)
    b_fits = kc * min(nc, n) * FLOAT <= cache_bytes
    a_elems = n * n * math.ceil(n / nc)
    b_elems = n * n * (1 if b_fits else math.ceil(n / mc))
    c_elems = 2 * n * n * math.ceil(n / kc)
    return (a_elems + b_elems + c_elems) * FLOAT


def intensity(schedule: str, n: int, cache_bytes: int, **kw) -> float:
    """Arithmetic intensity (FLOPs per byte moved into the cache) of a schedule: 2 n^3 / traffic."""
    return 2.0 * n ** 3 / matmul_traffic(schedule, n, cache_bytes, **kw)


def chain_bytes(n_elements: int, n_ops: int, fused: bool, params_per_op: int = 0, itemsize: int = FLOAT) -> int:
    """Bytes an elementwise chain of ``n_ops`` ops over ``n_elements`` moves to and from memory.

    Unfused, every op reads its input and writes its output (plus ``params_per_op`` per-element
    operands such as a bias row broadcast along the data, counted as read once per op); fused, the
    input is read once, the output written once, and each op's parameters read once.
    """
    if n_ops < 1 or n_elements < 1:
        raise ValueError(f"need n_ops >= 1 and n_elements >= 1, got {n_ops}, {n_elements}")
    data = n_elements * itemsize
    params = n_ops * params_per_op * itemsize
    return int((2 * data if fused else 2 * data * n_ops) + params)
