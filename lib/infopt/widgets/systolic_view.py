"""Plotly views of the systolic-array simulator: an animation of one tile (a slider over cycles) and
a comparison of runs (cycles split into compute and DMA, utilization, SRAM traffic)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def _fmt(v: float) -> str:
    if np.isnan(v):
        return "·"
    return f"{int(v)}" if float(v).is_integer() and abs(v) < 1e6 else f"{v:.2f}"


def _frame_data(trace: Any, t: int):
    import plotly.graph_objects as go

    R, C = trace.rows, trace.cols
    b_name = "w" if trace.dataflow == "ws" else "b"
    s_name = "psum" if trace.dataflow == "ws" else "acc"
    a, b, acc = trace.a[t], trace.b[t], trace.acc[t]
    text = [[f"a {_fmt(a[i, j])}<br>{b_name} {_fmt(b[i, j])}<br>{s_name} {_fmt(acc[i, j])}" for j in range(C)]
            for i in range(R)]
    heat = go.Heatmap(z=np.nan_to_num(acc).tolist(), text=text, texttemplate="%{text}", hoverinfo="text", colorscale="Blues",
                      showscale=False, xgap=3, ygap=3, zmin=float(np.nanmin(trace.acc)) if np.isfinite(trace.acc).any() else 0,
                      zmax=float(np.nanmax(trace.acc)) if np.isfinite(trace.acc).any() else 1)
    ii, jj = np.nonzero(trace.active[t])
    macs = [f"MAC m={trace.mac[t, i, j, 0]} n={trace.mac[t, i, j, 1]} k={trace.mac[t, i, j, 2]}" for i, j in zip(ii, jj)]
    ring = go.Scatter(x=jj.tolist(), y=ii.tolist(), mode="markers", hovertext=macs, hoverinfo="text",
                      marker=dict(symbol="square-open", size=58, color="orangered", line=dict(width=3)),
                      showlegend=False)
    return [heat, ring]


def _title(trace: Any, t: int) -> str:
    m, n, k = trace.shape
    flow = {"ws": "weight-stationary", "os": "output-stationary"}[trace.dataflow]
    return (f"{flow} {trace.rows}x{trace.cols} array, tile m={m} n={n} k={k} — cycle {t} ({trace.phase[t]}), "
            f"{int(trace.active[t].sum())} MACs")


def systolic_animation(trace: Any, height: int = 480) -> Any:
    """A plotly figure of one tile on the array: per PE its input (a), weight or B operand, and partial sum /
    accumulator; PEs doing a useful MAC are ringed. A slider (and Play) moves through the cycles."""
    import plotly.graph_objects as go

    T = trace.cycles
    frames = [go.Frame(data=_frame_data(trace, t), name=str(t), layout=go.Layout(title_text=_title(trace, t)))
              for t in range(T)]
    fig = go.Figure(data=_frame_data(trace, 0), frames=frames)
    steps = [dict(method="animate", label=str(t), args=[[str(t)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                                  transition=dict(duration=0))]) for t in range(T)]
    fig.update_layout(
        title_text=_title(trace, 0), height=height,
        xaxis=dict(title="PE column j (inputs a move right →)", tickmode="linear", dtick=1, range=[-0.5, trace.cols - 0.5]),
        yaxis=dict(title="PE row i (" + ("partial sums" if trace.dataflow == "ws" else "B operands") + " move down ↓)",
                   autorange="reversed", tickmode="linear", dtick=1),
        sliders=[dict(active=0, currentvalue=dict(prefix="cycle "), steps=steps, x=0.16, len=0.84, pad=dict(t=40))],
        updatemenus=[dict(type="buttons", showactive=False, direction="left", x=0, y=-0.2, xanchor="left",
                          yanchor="top", pad=dict(t=10), buttons=[
            dict(label="Play", method="animate",
                 args=[None, dict(frame=dict(duration=500, redraw=True), fromcurrent=True, transition=dict(duration=0))]),
            dict(label="Pause", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0, redraw=False))]),
        ])],
        margin=dict(l=60, r=20, t=60, b=90),
    )
    return fig


def compare_runs(runs: Mapping[str, Any], title: str = "the same matmul, different accelerators") -> Any:
    """Bar charts comparing RunStats by name: cycles (compute vs DMA), utilization, and DRAM<->SRAM bytes."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(runs)
    fig = make_subplots(rows=1, cols=3, subplot_titles=("cycles", "utilization (useful MACs / PE-cycles)", "DMA bytes"))
    fig.add_trace(go.Bar(x=names, y=[runs[n].compute_cycles for n in names], name="compute"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[runs[n].dma_cycles for n in names], name="DMA"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[runs[n].utilization for n in names], name="utilization", showlegend=False), 1, 2)
    fig.add_trace(go.Bar(x=names, y=[runs[n].dma_bytes_in for n in names], name="DRAM → SRAM"), 1, 3)
    fig.add_trace(go.Bar(x=names, y=[runs[n].dma_bytes_out for n in names], name="SRAM → DRAM"), 1, 3)
    fig.update_layout(barmode="stack", title_text=title, height=380)
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
    return fig
