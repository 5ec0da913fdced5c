"""Analytic cycle counts: one tile on the array, one DMA transfer, a command stream, a tiled matmul.

The model (the simulator must agree with it exactly, and the tests check that it does):
- weight-stationary tile m x k x n on R x C:  R (preload weights) + m + R + n - 2 (stream until C[m-1, n-1] leaves)
- output-stationary tile m x k x n on R x C:  k + m + n - 2 (stream until the last MAC) + R (drain the results)
- a DMA of b bytes:  dma_setup_cycles + ceil(b / dma_bytes_per_cycle)
- commands run one after another (no overlap of DMA and compute), so a program's cycles are the sum.
"""
from __future__ import annotations

from .config import AccelConfig, AccelError
from .isa import Command, Load, MatMul, Program, Store


def tile_cycles(config: AccelConfig, m: int, k: int, n: int) -> int:
    """Cycles of one m x k x n tile on the array, by the formula of its dataflow."""
    R = config.rows
    if config.dataflow == "ws":
        return R + (m + R + n - 2)
    return (k + m + n - 2) + R


def dma_cycles(config: AccelConfig, nbytes: int) -> int:
    """Cycles to move ``nbytes`` by DMA: a fixed setup plus the bytes at the configured bandwidth."""
    return config.dma_setup_cycles + -(-int(nbytes) // config.dma_bytes_per_cycle)


def command_bytes(cmd: Command, config: AccelConfig) -> int:
    """Bytes a LOAD or STORE moves (0 for MATMUL)."""
    if isinstance(cmd, Load):
        r, c = cmd.shape
        return r * c * config.buffer_dtype(cmd.buf).itemsize
    if isinstance(cmd, Store):
        r, c = cmd.shape
        return r * c * config.acc_dtype.itemsize
    return 0


def command_cycles(cmd: Command, config: AccelConfig) -> int:
    """Cycles of one command by the analytic model."""
    if isinstance(cmd, MatMul):
        return tile_cycles(config, cmd.m, cmd.k, cmd.n)
    if isinstance(cmd, (Load, Store)):
        return dma_cycles(config, command_bytes(cmd, config))
    raise AccelError(f"not an accelerator command: {cmd!r}")


def program_cycles(program: Program, config: AccelConfig) -> int:
    """Cycles of a whole command stream by the analytic model (commands run back to back)."""
    return sum(command_cycles(c, config) for c in program)


def blocks(total: int, size: int) -> list[int]:
    """The sizes of the blocks that cover ``total`` in steps of ``size`` (the last may be smaller)."""
    return [min(size, total - s) for s in range(0, total, size)]


def matmul_cycles(M: int, K: int, N: int, config: AccelConfig, bias: bool = False) -> int:
    """Cycles of the driver's tiled M x K x N matmul (``compile_matmul``), in closed form over its tile sizes."""
    from .driver import tiling

    TM, TK = tiling(M, K, N, config)
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    total = 0
    for mt in blocks(M, TM):
        total += sum(dma_cycles(config, mt * kt * isz) for kt in blocks(K, TK))  # the input row panel, once
        for nt in blocks(N, config.cols):
            if bias:
                total += dma_cycles(config, mt * nt * asz)  # accumulators start at the bias
            for kt in blocks(K, TK):
                total += dma_cycles(config, kt * nt * isz) + tile_cycles(config, mt, kt, nt)
            total += dma_cycles(config, mt * nt * asz)  # the results go back to DRAM
    return total
