"""The one place `infopt.mlir` touches unit 07's command-stream API (`infopt.accel`), so a rename there changes
this file only.

The API it adapts (after the `codegen` branch's renames): `DmaLoad`, `MatMul(a_addr, b_addr, c_addr, m, n, k, acc)`,
`DmaStore`, `tiling(M, N, K, config)` and `matmul_cycles(M, N, K, config)`, all in (M, N, K) order like infopt.mlir.
"""
from __future__ import annotations

import numpy as np

from ...accel import AccelConfig, Accelerator, DmaLoad, DmaStore, MatMul, Program, RunStats, matmul_cycles, tiling


def tile_sizes(M: int, N: int, K: int, config: AccelConfig) -> tuple[int, int, int]:
    """(TM, TN, TK): rows of A per block, columns per MATMUL, K per MATMUL -- the driver's tiling of unit 07, each
    the largest size a tile of this matmul takes (so never above M, N or K: the bounds an `npu.matmul` carries)."""
    tm, tk = tiling(M, N, K, config)
    return tm, min(config.cols, N), min(tk, K)


def analytic_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Unit 07's closed-form cycle count of the driver's tiled M x N x K matmul."""
    return matmul_cycles(M, N, K, config)


def dma_load(buffer: str, addr: int, tensor: str, row: int, col: int, rows: int, cols: int, repeat: int = 1):
    """DMA tensor[row:row+rows, col:col+cols] into SRAM `buffer` at byte `addr`."""
    return DmaLoad(buffer, addr, tensor, (row, row + rows), (col, col + cols), repeat)


def tile_matmul(a_addr: int, b_addr: int, c_addr: int, m: int, n: int, k: int, acc: bool):
    """One m x n x k tile on the array (acc: add to what `out` holds)."""
    return MatMul(a_addr, b_addr, c_addr, m, n, k, acc)


def dma_store(addr: int, tensor: str, row: int, col: int, rows: int, cols: int, relu: bool = False):
    """DMA the `out` tile at byte `addr` to tensor[row:row+rows, col:col+cols]."""
    return DmaStore(addr, tensor, (row, row + rows), (col, col + cols), relu)


def new_program(tensors: dict[str, tuple[int, int]]) -> Program:
    """An empty command stream over DRAM tensors of these shapes."""
    return Program(tensors=dict(tensors))


def simulate(program: Program, dram: dict[str, np.ndarray], config: AccelConfig) -> RunStats:
    """Run the command stream on unit 07's systolic-array simulator (stores write into `dram`)."""
    return Accelerator(config).run(program, dram)


def command_kinds(program: Program) -> dict[str, int]:
    """{"dma_load": n, "matmul": n, "dma_store": n} of a command stream."""
    return {"dma_load": program.count(DmaLoad), "matmul": program.count(MatMul), "dma_store": program.count(DmaStore)}
