"""Per-PE trace mode: every processing element stepped in plain Python, every register recorded every cycle.

Slow (use it on small tiles) but independent of the vectorized mode in ``infopt.accel.array``, so each
checks the other; the recorded ``ArrayTrace`` drives the animation in ``infopt.widgets.systolic_view``.
(This is the trace of the array's registers; a kernel's memory-address trace is ``infopt.schedule.address_trace``.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import AccelConfig
from .tile import TileRun, tile_operands

_NONE = np.nan


@dataclass
class ArrayTrace:
    """Registers of every PE at the end of every cycle (NaN where a register holds nothing).

    ``a``: the input register; ``b``: the weight (ws) or the streaming B operand (os); ``acc``: the partial
    sum passing down (ws) or the stationary accumulator (os); ``mac[t, i, j] = (m, n, k)`` of the useful
    MAC PE(i, j) did in cycle t, or -1s; ``phase[t]`` is 'preload', 'stream' or 'drain';
    ``outputs`` lists (cycle, m, n) when C[m, n] left the array.
    """

    dataflow: str
    rows: int
    cols: int
    shape: tuple[int, int, int]  # the tile's (m, n, k)
    a: list = field(default_factory=list)
    b: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    mac: list = field(default_factory=list)
    phase: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    def snapshot(self, phase: str, a, b, acc, mac) -> None:
        """Record the registers at the end of one cycle."""
        grid = lambda g: np.array([[_NONE if v is None else float(v) for v in row] for row in g])  # noqa: E731
        self.a.append(grid(a))
        self.b.append(grid(b))
        self.acc.append(grid(acc))
        self.mac.append(np.array(mac, dtype=np.int64).reshape(self.rows, self.cols, 3))
        self.phase.append(phase)

    def finish(self) -> "ArrayTrace":
        """Stack the per-cycle lists into arrays of shape (cycles, R, C[, 3])."""
        for name in ("a", "b", "acc", "mac"):
            setattr(self, name, np.stack(getattr(self, name)))
        return self

    @property
    def cycles(self) -> int:
        """Number of recorded cycles."""
        return len(self.phase)

    @property
    def active(self) -> np.ndarray:
        """(cycles, R, C) bool: which PEs did a useful MAC in each cycle."""
        return self.mac[..., 0] >= 0

    def utilization(self) -> float:
        """Useful MACs / (PEs x cycles)."""
        return float(self.active.sum()) / (self.rows * self.cols * self.cycles)

    def pe_schedule(self, i: int, j: int) -> list[tuple[int, int, int, int]]:
        """The MACs of PE(i, j) in order, as (cycle, m, n, k): C[m, n] += A[m, k] * B[k, n] at that cycle."""
        ts = np.nonzero(self.active[:, i, j])[0]
        return [(int(t), *(int(x) for x in self.mac[t, i, j])) for t in ts]


class _Arith:
    """Multiply-accumulate in the array's number format: int32 wrap-around or float32 rounding."""

    def __init__(self, config: AccelConfig) -> None:
        self.is_int = config.dtype == "int8"
        self.zero = 0 if self.is_int else np.float32(0)

    def value(self, x):
        """An operand as the exact scalar type of the format."""
        return int(x) if self.is_int else np.float32(x)

    def mac(self, acc, x, y):
        """acc + x * y, rounded or wrapped like the hardware."""
        if self.is_int:
            return ((acc + x * y + 2**31) & 0xFFFFFFFF) - 2**31
        return np.float32(acc + np.float32(x * y))


def _grid(R: int, C: int, v=None) -> list[list]:
    return [[v] * C for _ in range(R)]


def _no_mac(R: int, C: int) -> list:
    return [[(-1, -1, -1)] * C for _ in range(R)]


def _trace_ws(A: np.ndarray, B: np.ndarray, config: AccelConfig) -> TileRun:
    R, C = config.rows, config.cols
    (m, k), n = A.shape, B.shape[1]
    ar = _Arith(config)
    tr = ArrayTrace("ws", R, C, (m, n, k))
    Wp = [[ar.value(B[i, j]) if i < k and j < n else ar.zero for j in range(C)] for i in range(R)]
    w = _grid(R, C)
    for s in range(R):  # preload: weight rows enter at the top, bottom row first, and shift down
        w = [list(Wp[R - 1 - s])] + [row[:] for row in w[:-1]]
        tr.snapshot("preload", _grid(R, C), w, _grid(R, C), _no_mac(R, C))
    a, a_m, p = _grid(R, C), _grid(R, C, -1), _grid(R, C)
    out = np.zeros((m, n), dtype=config.acc_dtype)
    collected, t = 0, 0
    while collected < m * n:
        na, nam, np_, mac = _grid(R, C), _grid(R, C, -1), _grid(R, C), _no_mac(R, C)
        for i in range(R):
            for j in range(C):
                if j == 0:  # the skewed feed: row mm of A reaches PE row i at cycle mm + i
                    mm = t - i
                    val, idx = (ar.value(A[mm, i]) if i < k else ar.zero, mm) if 0 <= mm < m else (None, -1)
                else:
                    val, idx = a[i][j - 1], a_m[i][j - 1]
                na[i][j], nam[i][j] = val, idx
                if idx >= 0:
                    top = ar.zero if i == 0 else p[i - 1][j]
                    np_[i][j] = ar.mac(top, val, w[i][j])
                    if i < k and j < n:
                        mac[i][j] = (idx, j, i)
        for j in range(n):  # what leaves the bottom edge
            if nam[R - 1][j] >= 0:
                out[nam[R - 1][j], j] = np_[R - 1][j]
                tr.outputs.append((R + t, nam[R - 1][j], j))
                collected += 1
        a, a_m, p = na, nam, np_
        tr.snapshot("stream", a, w, p, mac)
        t += 1
    return TileRun(out, tr.cycles, m * k * n, tr.finish())


def _trace_os(A: np.ndarray, B: np.ndarray, config: AccelConfig) -> TileRun:
    R, C = config.rows, config.cols
    (m, k), n = A.shape, B.shape[1]
    ar = _Arith(config)
    tr = ArrayTrace("os", R, C, (m, n, k))
    a, a_k, b, b_k = _grid(R, C), _grid(R, C, -1), _grid(R, C), _grid(R, C, -1)
    acc = [[ar.zero if i < m and j < n else None for j in range(C)] for i in range(R)]
    done, t = 0, 0
    while done < m * k * n:
        na, nak, nb, nbk, mac = _grid(R, C), _grid(R, C, -1), _grid(R, C), _grid(R, C, -1), _no_mac(R, C)
        for i in range(R):
            for j in range(C):
                if j == 0:  # A[i, s] enters row i at cycle s + i
                    s = t - i
                    na[i][j], nak[i][j] = (ar.value(A[i, s]), s) if i < m and 0 <= s < k else (None, -1)
                else:
                    na[i][j], nak[i][j] = a[i][j - 1], a_k[i][j - 1]
                if i == 0:  # B[s, j] enters column j at cycle s + j
                    s = t - j
                    nb[i][j], nbk[i][j] = (ar.value(B[s, j]), s) if j < n and 0 <= s < k else (None, -1)
                else:
                    nb[i][j], nbk[i][j] = b[i - 1][j], b_k[i - 1][j]
                if nak[i][j] >= 0 and nbk[i][j] >= 0:
                    assert nak[i][j] == nbk[i][j], "skew broken: operands of different k met"
                    acc[i][j] = ar.mac(acc[i][j], na[i][j], nb[i][j])
                    mac[i][j] = (i, j, nak[i][j])
                    done += 1
        a, a_k, b, b_k = na, nak, nb, nbk
        tr.snapshot("stream", a, b, acc, mac)
        t += 1
    out = np.zeros((m, n), dtype=config.acc_dtype)
    for s in range(R):  # drain: results shift down a row per cycle; row R-1-s leaves at step s
        row = R - 1 - s
        if row < m:
            for j in range(n):
                out[row, j] = acc[R - 1][j]
                tr.outputs.append((t + s, row, j))
        acc = [[None] * C] + [r[:] for r in acc[:-1]]
        tr.snapshot("drain", _grid(R, C), _grid(R, C), acc, _no_mac(R, C))
    return TileRun(out, tr.cycles, m * k * n, tr.finish())


def trace_tile(a: np.ndarray, b: np.ndarray, config: AccelConfig) -> TileRun:
    """Run one tile PE by PE, recording every register at every cycle (``TileRun.trace`` is an ArrayTrace)."""
    A, B = tile_operands(a, b, config)
    return _trace_ws(A, B, config) if config.dataflow == "ws" else _trace_os(A, B, config)
