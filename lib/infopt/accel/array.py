"""The systolic array itself, vectorized mode: one numpy step per clock cycle over all R x C PEs.

Weight-stationary ('ws'): PE(i, j) holds weight B[i, j] of a k x n tile (k <= R, n <= C). Row m of the
input enters PE row i from the left at cycle m + i (the skew), moves one PE right per cycle; partial
sums move one PE down per cycle and C[m, j] leaves the bottom of column j at cycle m + (R-1) + j.
Output-stationary ('os'): PE(i, j) owns C[i, j] of an m x n tile (m <= R, n <= C). A[i, s] enters row i
at cycle s + i and moves right, B[s, j] enters column j at cycle s + j and moves down, and the PE
accumulates their product in place; afterwards the R rows of results shift out of the bottom.

The controller stops streaming once the last useful result is done, so one m x n x k tile takes
(see ``infopt.accel.cycles``): ws = R (weight preload) + (m + R + n - 2); os = (k + m + n - 2) + R (drain).
The per-PE trace mode in ``infopt.accel.pe_trace`` is an independent implementation that records every
register at every cycle; ``run_tile`` runs either.
"""
from __future__ import annotations

import numpy as np

from .config import AccelConfig, AccelError
from .pe_trace import trace_tile
from .tile import TileRun, tile_operands


def _window_source(stream: np.ndarray, width: int) -> np.ndarray:
    """Registers fed by a skewed stream, as a sliding window: regs(t)[i, j] = stream[t - j, i].

    Returns Z with regs(t) = Z[:, T-1-t : T-1-t+width] where T = len(stream); values shifted in before
    cycle 0 are zeros (bubbles). Reading a window is the same as shifting every register by one PE.
    """
    T, R = stream.shape
    S = np.zeros((R, T + width - 1), dtype=stream.dtype)
    S[:, width - 1:] = stream.T
    return np.ascontiguousarray(S[:, ::-1])


def skew_rows(x: np.ndarray, lanes: int, length: int) -> np.ndarray:
    """The skewed feed of a (steps x lanes') operand: out[t, i] = x[t - i, i] (zero outside), shape (length, lanes)."""
    steps, used = x.shape
    t = np.arange(length)[:, None] - np.arange(lanes)[None, :]
    lane = np.arange(lanes)[None, :]
    valid = (t >= 0) & (t < steps) & (lane < used)
    src = x[np.clip(t, 0, steps - 1), np.clip(lane, 0, used - 1)]
    return np.where(valid, src, 0).astype(x.dtype)


def ws_tile(a: np.ndarray, b: np.ndarray, config: AccelConfig) -> TileRun:
    """Weight-stationary: stream the m rows of ``a`` past the k x n weights ``b`` held in the PEs."""
    A, B = tile_operands(a, b, config)
    R, C = config.rows, config.cols
    m, k = A.shape
    n = B.shape[1]
    W = np.zeros((R, C), dtype=A.dtype)
    W[:k, :n] = B  # loaded by shifting one row per cycle down from the top: R cycles
    cycles = R
    T = m + R + n - 2  # the last useful output, C[m-1, n-1], leaves at cycle T - 1
    Z = _window_source(skew_rows(A, R, T), C)
    p_old = np.zeros((R, C), dtype=A.dtype)
    p_new = np.empty_like(p_old)
    prod = np.empty_like(p_old)
    out_skew = np.empty((T, C), dtype=A.dtype)
    for t in range(T):
        a_regs = Z[:, T - 1 - t: T - 1 - t + C]  # the inputs after shifting one PE right
        np.multiply(a_regs, W, out=prod)
        np.add(p_old[:-1], prod[1:], out=p_new[1:])  # partial sums move one PE down and add the MAC
        p_new[0] = prod[0]
        out_skew[t] = p_new[R - 1]  # what leaves the bottom edge this cycle
        p_old, p_new = p_new, p_old
        cycles += 1
    rows = np.arange(m)[:, None] + (R - 1) + np.arange(n)[None, :]
    out = out_skew[rows, np.arange(n)[None, :]]
    return TileRun(out, cycles, m * k * n)


def os_tile(a: np.ndarray, b: np.ndarray, config: AccelConfig) -> TileRun:
    """Output-stationary: each PE accumulates one output while rows of ``a`` and columns of ``b`` stream past."""
    A, B = tile_operands(a, b, config)
    R, C = config.rows, config.cols
    m, k = A.shape
    n = B.shape[1]
    T = k + m + n - 2  # the last useful MAC, at PE(m-1, n-1), happens at cycle T - 1
    Za = _window_source(skew_rows(A.T, R, T), C)  # A[i, s] enters row i at cycle s + i
    Zb = _window_source(skew_rows(B, C, T), R)  # B[s, j] enters column j at cycle s + j
    acc = np.zeros((R, C), dtype=A.dtype)
    prod = np.empty_like(acc)
    cycles = 0
    for t in range(T):
        a_regs = Za[:, T - 1 - t: T - 1 - t + C]
        b_regs = Zb[:, T - 1 - t: T - 1 - t + R].T
        np.multiply(a_regs, b_regs, out=prod)
        acc += prod
        cycles += 1
    out = np.empty((R, C), dtype=A.dtype)
    for s in range(R):  # drain: results shift down one row per cycle; row R-1-s leaves at step s
        out[R - 1 - s] = acc[R - 1]
        acc[1:] = acc[:-1].copy()
        cycles += 1
    return TileRun(out[:m, :n].copy(), cycles, m * k * n)


def run_tile(a: np.ndarray, b: np.ndarray, config: AccelConfig, mode: str = "vector") -> TileRun:
    """Multiply one tile on the array: ``mode='vector'`` (fast) or ``'trace'`` (per PE, records every cycle)."""
    if mode == "vector":
        return ws_tile(a, b, config) if config.dataflow == "ws" else os_tile(a, b, config)
    if mode == "trace":
        return trace_tile(a, b, config)
    raise AccelError(f"unknown simulation mode {mode!r}; use 'vector' or 'trace'")
