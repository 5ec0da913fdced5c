"""The roofline of this machine: peak FLOP/s and memory bandwidth measured with two quick microbenchmarks,
and a plotly chart that places kernels on it (attainable = min(peak, intensity x bandwidth)).

Peak: a kernel-IR kernel holding ``12 x lanes`` independent FMA chains in registers (no memory
traffic in the loop), compiled for the host's widest vectors. Bandwidth: a streaming kernel
``y[i] = 2 x[i]`` over arrays much larger than the caches (bytes = read + written). Both are
medians of a few runs, single-threaded; expect a few percent of noise on a shared machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Roofline:
    """Measured ceilings: ``peak_gflops`` (compute) and ``bandwidth_gbs`` (DRAM, streaming)."""

    peak_gflops: float
    bandwidth_gbs: float

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two ceilings meet: below it a kernel is memory-bound."""
        return self.peak_gflops / self.bandwidth_gbs

    def attainable(self, intensity: float | np.ndarray) -> Any:
        """GFLOP/s the roofline allows at an arithmetic intensity (FLOP per byte)."""
        return np.minimum(self.peak_gflops, np.asarray(intensity, dtype=float) * self.bandwidth_gbs)


def _peak_kernel(chains: int, lanes: int, iters: int):
    from ..codegen.expr import Buffer, Var
    from ..codegen.kernel_ir import Assign, Kernel, Store, loop

    x = Buffer("x", (2,))
    out = Buffer("out", (chains * lanes,), role="out")
    accs = [Var(f"a{c}_{l}", "f32") for c in range(chains) for l in range(lanes)]
    s, t = Var("s", "f32"), Var("t", "f32")
    body = [Assign(s, x[0]), Assign(t, x[1])] + [Assign(a, x[1]) for a in accs]
    body.append(loop("it", iters, body=[Assign(a, a * s + t) for a in accs]))
    body += [Store(out, (n,), a) for n, a in enumerate(accs)]
    return Kernel(f"peak_fma_{chains}x{lanes}_{iters}", (x, out), tuple(body), fastmath=True)


def measure_peak_gflops(iters: int = 200_000, repeats: int = 5) -> float:
    """Single-core peak float32 GFLOP/s: median over ``repeats`` runs of an FMA-only register kernel."""
    import time

    from ..codegen.compiled import compile_tuned
    from ..codegen.llvm_jit import host_vector_bits

    lanes = host_vector_bits() // 32
    chains = 12
    k = _peak_kernel(chains, lanes, iters)
    ck = compile_tuned(k, loop_vectorize=False)
    x = np.array([0.999999, 1e-7], np.float32)
    out = np.empty(chains * lanes, np.float32)
    ck(x, out)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        ck(x, out)
        times.append(time.perf_counter() - t)
    return 2.0 * chains * lanes * iters / float(np.median(times)) / 1e9


def measure_bandwidth_gbs(megabytes: int = 64, repeats: int = 5) -> float:
    """Streaming bandwidth (GB/s, read + write) of ``y = 2x`` over two ``megabytes``-sized float32 arrays."""
    import time

    from ..codegen.compiled import compile_kernel
    from ..codegen.expr import Buffer, Var
    from ..codegen.kernel_ir import Kernel, Store, loop

    n = megabytes * (1 << 20) // 4
    x, y = Buffer("x", (n,)), Buffer("y", (n,), role="out")
    i = Var("i")
    ck = compile_kernel(Kernel(f"stream_scale_{n}", (x, y), (loop("i", n, body=Store(y, (i,), x[i] * 2.0)),)))
    xa = np.ones(n, np.float32)
    ya = np.empty(n, np.float32)
    ck(xa, ya)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        ck(xa, ya)
        times.append(time.perf_counter() - t)
    return 2.0 * n * 4 / float(np.median(times)) / 1e9


def measure_roofline(quick: bool = True) -> Roofline:
    """Measure this machine's roofline (quick: ~0.5 s; otherwise more repeats and bigger arrays)."""
    if quick:
        return Roofline(measure_peak_gflops(100_000, 5), measure_bandwidth_gbs(32, 5))
    return Roofline(measure_peak_gflops(400_000, 9), measure_bandwidth_gbs(128, 9))


_SPOTS = ("top center", "bottom center", "middle right", "middle left", "top right", "bottom left")


def label_positions(points: Sequence[tuple[float, float]], near: float = 0.25) -> list[str]:
    """A plotly textposition for each point's label (its coordinates as drawn: log10 on a log axis), so that points
    within `near` of each other in both coordinates put their labels on different sides instead of on top of each
    other (two kernels with about the same intensity and speed are common on a roofline)."""
    spots: list[str] = []
    for i, (x, y) in enumerate(points):
        taken = {spots[j] for j, (u, v) in enumerate(points[:i]) if abs(x - u) <= near and abs(y - v) <= near}
        spots.append(next((s for s in _SPOTS if s not in taken), _SPOTS[i % len(_SPOTS)]))
    return spots


def roofline_figure(roof: Roofline, points: Sequence[dict[str, Any]] = (), title: str | None = None):
    """A log-log plotly roofline; each point is ``{"name", "intensity" (FLOP/byte), "gflops"}``."""
    import plotly.graph_objects as go

    ais = [p["intensity"] for p in points] or [roof.ridge]
    lo, hi = min(min(ais) / 4, roof.ridge / 16), max(max(ais) * 4, roof.ridge * 16)
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=roof.attainable(xs), mode="lines", name="roofline",
                             line=dict(color="black")))
    spots = label_positions([(np.log10(p["intensity"]), np.log10(p["gflops"])) for p in points])
    for p, spot in zip(points, spots):
        fig.add_trace(go.Scatter(x=[p["intensity"]], y=[p["gflops"]], mode="markers+text", name=p["name"],
                                 text=[p["name"]], textposition=spot, marker=dict(size=11)))
    fig.update_layout(title=title or f"Roofline: peak {roof.peak_gflops:.0f} GFLOP/s, "
                      f"bandwidth {roof.bandwidth_gbs:.0f} GB/s, ridge {roof.ridge:.1f} FLOP/B",
                      xaxis=dict(type="log", title="arithmetic intensity (FLOP / byte from memory)"),
                      yaxis=dict(type="log", title="GFLOP/s"), height=420)
    return fig
