"""The tiling explorer: which tiles of A, B and C a tiled matmul touches as time runs, its simulated misses,
and its measured GFLOP/s, with sliders for the tile sizes and a menu for the loop order.

``tile_animation(kernel)`` is a plotly figure (a slider over time windows) of three heatmaps: the
elements of A, B and C touched in the current window (dark) and before it (light).
``tiling_stats(n, tiles, order)`` replays the kernel through the cache simulator and, optionally,
times it at a larger size. ``tiling_explorer()`` wires both to ipywidgets.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def touched_frames(trace: Any, shapes: dict[str, tuple[int, int]], frames: int = 40) -> dict[str, np.ndarray]:
    """Per buffer, an array (frames, rows, cols): 2 = touched in that time window, 1 = touched earlier, 0 = not yet."""
    n = len(trace)
    edges = np.linspace(0, n, frames + 1).astype(int)
    out = {}
    for name, (r, c) in shapes.items():
        mask = trace.of(name)
        pos = np.nonzero(mask)[0]
        idx = trace.indices[mask]
        z = np.zeros((frames, r * c), np.int8)
        seen = np.zeros(r * c, bool)
        for f in range(frames):
            sel = (pos >= edges[f]) & (pos < edges[f + 1])
            now = np.zeros(r * c, bool)
            now[idx[sel]] = True
            z[f] = np.where(now, 2, np.where(seen, 1, 0))
            seen |= now
        out[name] = z.reshape(frames, r, c)
    return out


def tile_animation(kernel: Any, frames: int = 40, height: int = 380, title: str | None = None) -> Any:
    """A plotly figure animating which elements of A, B and C the matmul ``kernel`` touches over time."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..codegen.trace import trace_kernel

    shapes = {b.name: b.shape for b in kernel.buffers if b.name in ("A", "B", "C")}
    if set(shapes) != {"A", "B", "C"} or any(len(s) != 2 for s in shapes.values()):
        raise ValueError("tile_animation needs a matmul kernel with 2-D buffers A, B and C")
    tr = trace_kernel(kernel, max_accesses=2_000_000)
    z = touched_frames(tr, shapes, frames)
    scale = [[0, "#f4f4f4"], [0.5, "#9ecae1"], [1.0, "#08519c"]]
    names = ["A", "B", "C"]
    fig = make_subplots(rows=1, cols=3, subplot_titles=[f"{n} {shapes[n][0]}x{shapes[n][1]}" for n in names])

    def heat(n: str, f: int) -> Any:
        return go.Heatmap(z=z[n][f], zmin=0, zmax=2, colorscale=scale, showscale=False, xgap=1, ygap=1,
                          hovertemplate=f"{n}[%{{y}}, %{{x}}]<extra></extra>")

    for c, n in enumerate(names, 1):
        fig.add_trace(heat(n, 0), row=1, col=c)
        fig.update_yaxes(autorange="reversed", row=1, col=c, scaleanchor=f"x{c if c > 1 else ''}")
    fig.frames = [go.Frame(data=[heat(n, f) for n in names], name=str(f), traces=[0, 1, 2]) for f in range(frames)]
    steps = [dict(method="animate", label=str(f), args=[[str(f)], dict(mode="immediate", frame=dict(duration=0, redraw=True))])
             for f in range(frames)]
    fig.update_layout(
        height=height, title=title or f"{kernel.name}: elements touched (dark: this window, light: before)",
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="time window "), pad=dict(t=30))],
        updatemenus=[dict(type="buttons", showactive=False, x=0, y=-0.25, buttons=[dict(
            label="play", method="animate", args=[None, dict(frame=dict(duration=150, redraw=True), fromcurrent=True)])])])
    return fig


def tiling_stats(n: int, tiles: Sequence[int], order: str = "ijk", levels: Any = None,
                 time_n: int | None = None) -> dict[str, Any]:
    """Simulated misses at size ``n`` (cache levels ``levels``), and GFLOP/s measured at ``time_n`` when given."""
    from ..codegen.cachesim import SMALL_HIERARCHY, kernel_misses
    from ..codegen.matmul_ladder import tiled_order

    k = tiled_order(n, n, n, tuple(tiles), order)
    st = kernel_misses(k, levels or SMALL_HIERARCHY)
    out: dict[str, Any] = {"kernel": k, **st.as_dict()}
    if time_n:
        from ..codegen.compiled import compile_kernel
        from ..runtime import interleaved

        kt = tiled_order(time_n, time_n, time_n, tuple(tiles), order)
        ck = compile_kernel(kt)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((time_n, time_n), dtype=np.float32)
        b = rng.standard_normal((time_n, time_n), dtype=np.float32)
        c = np.zeros((time_n, time_n), np.float32)
        s = interleaved({"k": lambda: ck(a, b, c)}, repeats=3, warmup=1)
        out["gflops"] = 2 * time_n ** 3 / float(np.median(s["k"])) / 1e9
    return out


def stats_html(st: dict[str, Any]) -> str:
    """A one-line HTML summary of ``tiling_stats``."""
    parts = [f"<b>{k.replace('_', ' ')}</b>: {v:,}" for k, v in st.items() if k.endswith("misses")]
    parts.append(f"<b>bytes from memory</b>: {st['memory_bytes']:,}")
    if "gflops" in st:
        parts.append(f"<b>measured</b>: {st['gflops']:.1f} GFLOP/s")
    return " &nbsp;|&nbsp; ".join(parts)


def tiling_explorer(n: int = 16, time_n: int | None = 128, frames: int = 30) -> Any:
    """ipywidgets: sliders for ti, tj, tk, a loop-order menu; shows the touch animation, misses and GFLOP/s."""
    import ipywidgets as widgets

    sl = {v: widgets.IntSlider(value=max(2, n // 4), min=1, max=n, description=f"t{v}", continuous_update=False)
          for v in "ijk"}
    order = widgets.Dropdown(options=ORDERS, value="ijk", description="tile order")
    out_fig = widgets.Output()
    info = widgets.HTML()

    def update(*_: Any) -> None:
        tiles = tuple(sl[v].value for v in "ijk")
        st = tiling_stats(n, tiles, order.value, time_n=time_n)
        info.value = stats_html(st)
        out_fig.clear_output(wait=True)
        with out_fig:
            tile_animation(st["kernel"], frames=frames).show()

    for w in (*sl.values(), order):
        w.observe(update, names="value")
    box = widgets.VBox([widgets.HBox([*sl.values(), order]), info, out_fig])
    box.update = update  # type: ignore[attr-defined]  # tests and notebooks can refresh explicitly
    update()
    return box
