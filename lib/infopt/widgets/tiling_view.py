"""The tiling explorer: which tiles of A, B and C a tiled matmul touches as time runs, its simulated misses,
and its measured GFLOP/s, with sliders for the tile sizes and a menu for the loop order.

``tile_animation(kernel)`` is a plotly figure (a slider over time windows) of three heatmaps: the
elements of A, B and C touched in the current window (dark) and before it (light), from the kernel's
address trace (``infopt.schedule.address_trace``). ``tiling_explorer()`` wires it, with the simulated misses
and measured GFLOP/s of ``infopt.runtime.schedule_bench.tiling_stats``, to ipywidgets.
"""
from __future__ import annotations

from typing import Any

ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def tile_animation(kernel: Any, frames: int = 40, height: int = 380, title: str | None = None) -> Any:
    """A plotly figure animating which elements of A, B and C the matmul ``kernel`` touches over time."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..schedule.address_trace import trace_kernel

    shapes = {b.name: b.shape for b in kernel.buffers if b.name in ("A", "B", "C")}
    if set(shapes) != {"A", "B", "C"} or any(len(s) != 2 for s in shapes.values()):
        raise ValueError("tile_animation needs a matmul kernel with 2-D buffers A, B and C")
    tr = trace_kernel(kernel, max_accesses=2_000_000)
    z = tr.touch_windows(shapes, frames)
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

    from ..runtime.schedule_bench import tiling_stats

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
