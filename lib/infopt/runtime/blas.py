"""numpy's BLAS as a benchmark should measure it: without the host's OpenBLAS overrides, and named in the output.

Some hosts set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which pick a slower OpenBLAS kernel; OpenBLAS reads them once,
when it loads, so a benchmark re-runs itself without them rather than unsetting them after numpy is imported.
"""
from __future__ import annotations

import os
import sys

BLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def rerun_without_blas_overrides() -> None:
    """Re-execute this script with the overrides removed from its environment (returns only when none is set)."""
    if any(v in os.environ for v in BLAS_OVERRIDES):
        env = {k: v for k, v in os.environ.items() if k not in BLAS_OVERRIDES}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def blas_kernel() -> str:
    """numpy's BLAS as threadpoolctl reports it, e.g. 'openblas 0.3.31 (Haswell kernel, 1 thread)'."""
    import numpy  # noqa: F401 (loads the BLAS threadpoolctl inspects)
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not blas:
        return "no BLAS found by threadpoolctl"
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture', '?')} kernel, "
                     f"{i.get('num_threads')} thread{'s' if i.get('num_threads') != 1 else ''})" for i in blas)
