"""Analytic cycle counts: one tile on the array, one DMA transfer, a command stream, a tiled matmul.

The model (the simulator must agree with it exactly, and the tests check that it does):
- weight-stationary tile m x n x k on R x C:  R (preload weights) + m + R + n - 2 (stream until C[m-1, n-1] leaves)
- output-stationary tile m x n x k on R x C:  k + m + n - 2 (stream until the last MAC) + R (drain the results)
- a DMA of b bytes:  dma_setup_cycles + ceil(b / dma_bytes_per_cycle)
- commands run one after another (no overlap of DMA and compute), so a program's cycles are the sum.
Sizes come in the order (M, N, K), the configuration last.
"""
from __future__ import annotations

from .config import AccelConfig, AccelError
from .isa import Command, DmaLoad, DmaStore, MatMul, Program
from .tiling import blocks, tiling


def tile_cycles(m: int, n: int, k: int, config: AccelConfig) -> int:
    """Cycles of one m x n x k tile on the array, by the formula of its dataflow."""
    R = config.rows
    if config.dataflow == "ws":
        return R + (m + R + n - 2)
    return (k + m + n - 2) + R


def dma_cycles(nbytes: int, config: AccelConfig) -> int:
    """Cycles to move ``nbytes`` by DMA: a fixed setup plus the bytes at the configured bandwidth."""
    return config.dma_setup_cycles + -(-int(nbytes) // config.dma_bytes_per_cycle)


def command_bytes(cmd: Command, config: AccelConfig) -> int:
    """Bytes a DMA load or store moves (0 for MATMUL)."""
    if isinstance(cmd, DmaLoad):
        r, c = cmd.shape
        return r * c * config.buffer_dtype(cmd.buf).itemsize
    if isinstance(cmd, DmaStore):
        r, c = cmd.shape
        return r * c * config.acc_dtype.itemsize
    return 0


def command_cycles(cmd: Command, config: AccelConfig) -> int:
    """Cycles of one command by the analytic model."""
    if isinstance(cmd, MatMul):
        return tile_cycles(cmd.m, cmd.n, cmd.k, config)
    if isinstance(cmd, (DmaLoad, DmaStore)):
        return dma_cycles(command_bytes(cmd, config), config)
    raise AccelError(f"not an accelerator command: {cmd!r}")


def program_cycles(program: Program, config: AccelConfig) -> int:
    """Cycles of a whole command stream by the analytic model (commands run back to back)."""
    return sum(command_cycles(c, config) for c in program)


def matmul_cycles(M: int, N: int, K: int, config: AccelConfig, bias: bool = False) -> int:
    """Cycles of the driver's tiled M x N x K matmul (``compile_matmul``), in closed form over its tile sizes."""
    TM, TK = tiling(M, N, K, config)
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    total = 0
    for mt in blocks(M, TM):
        total += sum(dma_cycles(mt * kt * isz, config) for kt in blocks(K, TK))  # the input row panel, once
        for nt in blocks(N, config.cols):
            if bias:
                total += dma_cycles(mt * nt * asz, config)  # accumulators start at the bias
            for kt in blocks(K, TK):
                total += dma_cycles(kt * nt * isz, config) + tile_cycles(mt, nt, kt, config)
            total += dma_cycles(mt * nt * asz, config)  # the results go back to DRAM
    return total
