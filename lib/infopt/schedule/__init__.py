"""Units 06 and 11: schedules over the kernel IR of ``infopt.codegen``, and the models that judge them.

- ``loop_primitives`` (split, tile, reorder, fuse, unroll, vectorize, parallel) and ``placement`` (pack,
  compute_at, contract): each checks legality, raises ``ScheduleError`` saying why not, and verifies its result;
  ``builder.Schedule`` chains them and records the steps;
- ``matmul_ladder``: C = A @ B from the naive nest up to packed panels and a register-blocked micro-kernel;
- ``address_trace`` and ``cachesim``: the exact load/store trace of a kernel and an LRU cache replaying it;
  ``traffic``: analytic bytes-moved models for sizes too large to simulate; ``chains``: elementwise chains for fusion.

The schedule search of unit 11 (cost model, BEAM) builds on these. This package imports ``infopt.codegen``,
never the reverse; importing it does not load llvmlite.
"""
from .builder import Schedule
from .loop_primitives import ScheduleError, fuse, parallel, reorder, split, tile, unroll, vectorize
from .placement import compute_at, contract, pack

__all__ = ["Schedule", "ScheduleError", "compute_at", "contract", "fuse", "pack", "parallel", "reorder", "split",
           "tile", "unroll", "vectorize"]
