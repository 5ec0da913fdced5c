"""Views for unit 04: the stage viewer of a progressive lowering (a dropdown of stages, the IR after the stage with
the lines that stage wrote marked, and the op counts per dialect across stages).

Everything shown comes from `infopt.mlir.pipeline` (the Lowering's IR, `dialect_counts`, `changed_lines`).
"""
from __future__ import annotations

import html
from typing import Any

from ..mlir.pipeline import Lowering, changed_lines, dialect_counts

PALETTE = {"linalg": "#1f77b4", "tensor": "#aec7e8", "memref": "#ff7f0e", "affine": "#2ca02c", "scf": "#98df8a",
           "vector": "#d62728", "arith": "#9467bd", "math": "#c5b0d5", "func": "#8c564b", "llvm": "#e377c2",
           "llvm-ir": "#7f7f7f", "builtin": "#bcbd22", "bufferization": "#17becf", "cf": "#dbdb8d"}


def stage_html(lowering: Lowering, name: str, max_lines: int = 160) -> str:
    """The IR after stage `name` as HTML, lines the stage wrote (not in the previous stage's IR) marked."""
    names = lowering.names
    if name not in names:
        raise ValueError(f"no stage {name!r}; the stages are {names}")
    k = names.index(name)
    before = lowering.input if k == 0 else lowering.results[k - 1].ir
    after = lowering.results[k].ir
    flags = changed_lines(before, after)
    lines = after.splitlines()
    rows = []
    for line, new in list(zip(lines, flags))[:max_lines]:
        style = "background:#e6ffed" if new else ""
        mark = "+" if new else " "
        rows.append(f"<div style='{style}'>{mark} {html.escape(line)}</div>")
    more = f"<div style='color:#888'>… {len(lines) - max_lines} more lines</div>" if len(lines) > max_lines else ""
    stage = lowering.results[k].stage
    head = (f"<b>{html.escape(stage.name)}</b>: {html.escape(stage.what)} &nbsp; <span style='color:#888'>"
            f"({sum(flags)} of {len(lines)} lines new, {lowering.results[k].seconds * 1e3:.0f} ms)</span>")
    return (f"<div>{head}</div><div style='font-family:monospace;font-size:11px;white-space:pre;max-height:420px;"
            f"overflow:auto;border:1px solid #ddd;padding:4px'>{''.join(rows)}{more}</div>")


def counts_figure(lowering: Lowering, current: str | None = None, height: int = 320) -> Any:
    """Bars of each stage's ops, split by dialect as a share of the stage (so a 6-op stage is as visible as a
    140-op one), the stage's total op count written above its bar, and the current stage outlined."""
    import plotly.graph_objects as go

    names = lowering.names
    counts = [dialect_counts(r.ir) for r in lowering.results]
    totals = [sum(c.values()) for c in counts]
    dialects = sorted({d for c in counts for d in c}, key=lambda d: list(PALETTE).index(d) if d in PALETTE else 99)
    fig = go.Figure()
    for d in dialects:
        fig.add_trace(go.Bar(name=d, x=names, y=[c.get(d, 0) for c in counts], marker_color=PALETTE.get(d),
                             customdata=[[c.get(d, 0), t] for c, t in zip(counts, totals)],
                             hovertemplate=d + ": %{customdata[0]} of %{customdata[1]} ops<extra></extra>"))
    fig.add_trace(go.Scatter(x=names, y=[100] * len(names), mode="text", text=[f"{t} ops" for t in totals],
                             textposition="top center", showlegend=False, hoverinfo="skip"))
    title = "ops per dialect after each stage (share of the stage; total above)"
    if current is not None:
        k = names.index(current)
        title += f" — {current}: {totals[k]} ops"
        fig.add_vrect(x0=k - 0.45, x1=k + 0.45, line_width=2, line_color="black", fillcolor="rgba(0,0,0,0)")
    fig.update_layout(barmode="stack", barnorm="percent", title=title, height=height,
                      yaxis=dict(title="% of the stage's ops", range=[0, 112]),
                      margin=dict(l=50, r=20, t=50, b=40), legend=dict(orientation="h"))
    return fig


def stage_viewer(lowering: Lowering, max_lines: int = 160) -> Any:
    """An ipywidgets view: a dropdown of stages, the counts plot (its figure also kept as `.figure`) and the IR after
    the chosen stage (new lines marked)."""
    import ipywidgets as widgets
    from IPython.display import HTML, display

    names = lowering.names
    if not names:
        raise ValueError("the lowering has no stages")
    pick = widgets.Dropdown(options=names, value=names[0], description="stage")
    plot = widgets.Output()     # an Output with fig.show(), not a FigureWidget (that takes seconds to create)
    ir = widgets.Output()
    box = widgets.VBox([pick, plot, ir])
    box.figure = None

    def show(name: str) -> None:
        box.figure = counts_figure(lowering, name)
        plot.clear_output(wait=True)
        with plot:
            box.figure.show()
        ir.clear_output(wait=True)
        with ir:
            display(HTML(stage_html(lowering, name, max_lines)))

    pick.observe(lambda ch: show(ch["new"]), names="value")
    show(names[0])
    return box
