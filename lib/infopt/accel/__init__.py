"""Unit 07: custom backends — a cycle-level systolic-array simulator, its command stream, and BYOC offload.

``AccelConfig`` describes the array; ``compile_matmul`` tiles a matmul into a ``Program`` of DmaLoad / MatMul /
DmaStore commands; ``Accelerator.run`` (``infopt.accel.simulator``) executes it, each tile in vectorized mode
(``array``) or per-PE trace mode (``pe_trace``); ``infopt.accel.cycles`` holds the analytic cycle model the
simulator agrees with; ``infopt.accel.byoc`` offloads graph nodes to it. Matmul sizes are (M, N, K), the
configuration comes last.
"""
from .array import run_tile
from .config import DATAFLOWS, AccelConfig, AccelError
from .cycles import dma_cycles, matmul_cycles, program_cycles, tile_cycles
from .driver import compile_matmul, matmul
from .isa import DmaLoad, DmaStore, MatMul, Program, parse_asm
from .simulator import Accelerator, RunStats, Sram
from .tile import TileRun
from .tiling import tiling

_BYOC = ("Annotation", "PartitionForAccel", "annotate", "execute", "may_join", "offload", "partition", "run_offloaded")


def __getattr__(name: str):
    """The BYOC names load on first use (they pull in infopt.passes)."""
    if name in _BYOC:
        from . import byoc

        return getattr(byoc, name)
    raise AttributeError(f"module 'infopt.accel' has no attribute {name!r}")


__all__ = [
    *_BYOC, "DATAFLOWS", "AccelConfig", "AccelError", "Accelerator", "DmaLoad", "DmaStore", "MatMul", "Program",
    "RunStats", "Sram", "TileRun", "compile_matmul", "dma_cycles", "matmul", "matmul_cycles", "parse_asm",
    "program_cycles", "run_tile", "tile_cycles", "tiling",
]
