"""Measurements behind unit 06's explorers: a fused vs an unfused elementwise chain, and a tiled matmul's simulated
cache misses and measured GFLOP/s. The widgets (``infopt.widgets.fusion_view``, ``tiling_view``) only draw these.

Times are medians of interleaved runs (``infopt.runtime.interleaved``); misses come from the cache simulator
(``infopt.schedule.cachesim``), so they are the same on every machine.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .timing import interleaved


def fusion_compare(n: int, ops: Sequence[str], repeats: int = 5, time_it: bool = True) -> dict[str, Any]:
    """Unfused vs fused kernels for the chain ``ops`` over ``n`` elements: bytes, loops, times, max difference."""
    from ..codegen.compiled import compile_kernel
    from ..schedule.chains import elementwise_chain, fused_chain, kernel_bytes, loop_count

    unf = elementwise_chain(n, ops)
    fus = fused_chain(unf)
    out: dict[str, Any] = {"ops": list(ops), "n": n, "unfused": unf, "fused": fus,
                           "bytes": {"unfused": kernel_bytes(unf), "fused": kernel_bytes(fus)},
                           "loops": {"unfused": loop_count(unf), "fused": loop_count(fus)}}
    cu, cf = compile_kernel(unf), compile_kernel(fus)
    rng = np.random.default_rng(0)
    ins = [rng.uniform(-1, 1, n).astype(np.float32) for b in unf.buffers if b.role == "in"]
    (yu,), (yf,) = cu.run(*ins), cf.run(*ins)
    out["max_abs_diff"] = float(np.max(np.abs(yu - yf))) if n else 0.0
    if time_it:
        yu_buf, yf_buf = np.empty(n, np.float32), np.empty(n, np.float32)
        s = interleaved({"unfused": lambda: cu(*ins, yu_buf), "fused": lambda: cf(*ins, yf_buf)},
                        repeats=repeats, warmup=1)
        out["ms"] = {k: 1e3 * float(np.median(v)) for k, v in s.items()}
    return out


def tiling_stats(n: int, tiles: Sequence[int], order: str = "ijk", levels: Any = None,
                 time_n: int | None = None) -> dict[str, Any]:
    """Simulated misses of ``tiled_order(n, n, n, tiles, order)`` (cache levels ``levels``), and its GFLOP/s
    measured at ``time_n`` when given; ``kernel`` is the simulated kernel."""
    from ..schedule.cachesim import SMALL_HIERARCHY, kernel_misses
    from ..schedule.matmul_ladder import tiled_order

    k = tiled_order(n, n, n, tuple(tiles), order)
    st = kernel_misses(k, levels or SMALL_HIERARCHY)
    out: dict[str, Any] = {"kernel": k, **st.as_dict()}
    if time_n:
        from ..codegen.compiled import compile_kernel

        kt = tiled_order(time_n, time_n, time_n, tuple(tiles), order)
        ck = compile_kernel(kt)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((time_n, time_n), dtype=np.float32)
        b = rng.standard_normal((time_n, time_n), dtype=np.float32)
        c = np.zeros((time_n, time_n), np.float32)
        s = interleaved({"k": lambda: ck(a, b, c)}, repeats=3, warmup=1)
        out["gflops"] = 2 * time_n ** 3 / float(np.median(s["k"])) / 1e9
    return out
