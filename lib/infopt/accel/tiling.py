"""How the driver cuts a matmul into tiles: block sizes from the array and the SRAMs, and the blocks that cover a size.

Both the driver (``infopt.accel.driver``) and the analytic cycle model (``infopt.accel.cycles``) use these, so the
model always counts the same tiles the driver emits.
"""
from __future__ import annotations

from .config import AccelConfig, AccelError


def blocks(total: int, size: int) -> list[int]:
    """The sizes of the blocks that cover ``total`` in steps of ``size`` (the last may be smaller)."""
    return [min(size, total - s) for s in range(0, total, size)]


def tiling(M: int, N: int, K: int, config: AccelConfig) -> tuple[int, int]:
    """The driver's block sizes (TM rows of A per block, TK of K per MATMUL) for this matmul and config."""
    if min(M, N, K) < 1:
        raise AccelError(f"matmul shape M={M} N={N} K={K}: every dimension must be >= 1")
    R, C = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    if config.dataflow == "ws":
        TK = R
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (C * asz))
        if R * C * isz > config.wt_sram_bytes:
            raise AccelError(f"the wt SRAM ({config.wt_sram_bytes} B) cannot hold one {R}x{C} weight tile")
    else:
        TM = min(M, R, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (C * isz))
        if R * C * asz > config.out_sram_bytes:
            raise AccelError(f"the out SRAM ({config.out_sram_bytes} B) cannot hold one {R}x{C} output tile")
    if TM < 1 or TK < 1:
        raise AccelError(
            f"matmul M={M} N={N} K={K} cannot be tiled on this config: one row panel of K={K} needs "
            f"{K * isz} B of `in` SRAM (has {config.in_sram_bytes} B); enlarge the SRAM or split K"
        )
    return TM, TK
