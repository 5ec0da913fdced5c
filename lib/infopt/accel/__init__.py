"""Unit 07: custom backends — a cycle-level systolic-array simulator, its command stream, and BYOC offload.

``AccelConfig`` describes the array; ``compile_matmul`` tiles a matmul into a ``Program`` of LOAD/MATMUL/STORE
commands; ``Accelerator.run`` executes it (vectorized or per-PE trace mode); ``infopt.accel.cycles`` holds the
analytic cycle model the simulator agrees with; ``infopt.accel.byoc`` offloads graph nodes to it.
"""
from .array import TileRun, run_tile
from .config import DATAFLOWS, AccelConfig, AccelError
from .cycles import dma_cycles, matmul_cycles, program_cycles, tile_cycles
from .driver import compile_matmul, matmul, tiling
from .executor import Accelerator, RunStats, Sram
from .isa import Load, MatMul, Program, Store, parse_asm

_BYOC = ("Annotation", "PartitionForAccel", "annotate", "execute", "may_join", "offload", "partition", "run_offloaded")


def __getattr__(name: str):
    """The BYOC names load on first use (they pull in infopt.passes)."""
    if name in _BYOC:
        from . import byoc

        return getattr(byoc, name)
    raise AttributeError(f"module 'infopt.accel' has no attribute {name!r}")


__all__ = [*_BYOC, 
    "DATAFLOWS", "AccelConfig", "AccelError", "Accelerator", "Load", "MatMul", "Program", "RunStats", "Sram",
    "Store", "TileRun", "compile_matmul", "dma_cycles", "matmul", "matmul_cycles", "parse_asm", "program_cycles",
    "run_tile", "tile_cycles", "tiling",
]
