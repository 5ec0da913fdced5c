"""One tile on the systolic array: its result type, the shape rules of each dataflow, and operand checks.

Both simulation modes (the vectorized ``infopt.accel.array`` and the per-PE ``infopt.accel.pe_trace``) start here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import AccelConfig, AccelError, as_operand


@dataclass
class TileRun:
    """The result of one tile on the array: its output (m x n, accumulator dtype), cycles, useful MACs, trace."""

    out: np.ndarray
    cycles: int
    macs: int
    trace: Any = None


def check_tile(m: int, n: int, k: int, config: AccelConfig, what: str = "tile") -> None:
    """Raise an AccelError if an m x k by k x n tile cannot be placed on the array under its dataflow."""
    R, C = config.rows, config.cols
    if min(m, n, k) < 1:
        raise AccelError(f"{what}: empty matmul tile m={m} n={n} k={k}; every dimension must be >= 1")
    if config.dataflow == "ws" and (k > R or n > C):
        raise AccelError(
            f"{what}: weight-stationary tile k={k} x n={n} does not fit the {R}x{C} array "
            f"(needs k <= {R} rows and n <= {C} columns); tile the matmul (infopt.accel.compile_matmul)"
        )
    if config.dataflow == "os" and (m > R or n > C):
        raise AccelError(
            f"{what}: output-stationary tile m={m} x n={n} does not fit the {R}x{C} array "
            f"(needs m <= {R} rows and n <= {C} columns); tile the matmul (infopt.accel.compile_matmul)"
        )


def tile_operands(a: np.ndarray, b: np.ndarray, config: AccelConfig) -> tuple[np.ndarray, np.ndarray]:
    """The tile's operands in the accumulator dtype, after checking their dtype, shapes and fit on the array."""
    a = as_operand(a, config, "input tile A")
    b = as_operand(b, config, "weight tile B")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise AccelError(f"tile shapes {a.shape} x {b.shape} are not a matmul (need (m, k) x (k, n))")
    check_tile(a.shape[0], b.shape[1], a.shape[1], config)
    return a.astype(config.acc_dtype), b.astype(config.acc_dtype)
