"""Views for unit 02: step through a pass pipeline (graph picture + statistics) and draw a memory plan.

``pipeline_stepper(result)`` is an ipywidgets slider over the snapshots a ``PassManager.run(...,
snapshots=True)`` kept: the graph after each pass (nodes that are new at that step are ringed) and the
statistics table up to it. ``plot_memory_plan(plan)`` draws buffers as rectangles in time x address.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

from ..ir.graph import Graph


def stats_table_html(rows: Sequence[dict[str, Any]], current: int | None = None) -> str:
    """An HTML table of pass-manager rows; row ``current`` is highlighted, later rows are greyed."""
    if not rows:
        return "<i>no passes run</i>"
    cols = list(rows[0])
    head = "".join(f"<th style='padding:2px 8px'>{html.escape(c)}</th>" for c in cols)
    body = []
    for k, r in enumerate(rows):
        style = ""
        if current is not None and k == current:
            style = "background:#fff3c4;font-weight:bold"
        elif current is not None and k > current:
            style = "color:#aaa"
        cells = "".join(f"<td style='padding:2px 8px'>{html.escape(str(r[c]))}</td>" for c in cols)
        body.append(f"<tr style='{style}'>{cells}</tr>")
    return f"<table style='font-size:12px;border-collapse:collapse'><tr>{head}</tr>{''.join(body)}</table>"


def _new_nodes(before: Graph, after: Graph) -> set[str]:
    """Names of nodes in ``after`` that are not (by op, inputs, outputs) in ``before``."""
    old = {(n.op, tuple(n.inputs), tuple(n.outputs)) for n in before.nodes}
    return {n.name for n in after.nodes if (n.op, tuple(n.inputs), tuple(n.outputs)) not in old and n.name}


def pipeline_figure(result: Any, step: int, height: int = 520) -> Any:
    """The graph after pipeline step ``step`` (0 = the input), new nodes ringed, as a plotly Figure."""
    from .graph_view import plot_graph

    snaps = result.snapshots
    if not snaps:
        raise ValueError("the pipeline result has no snapshots: run the PassManager with run(graph, snapshots=True)")
    if not 0 <= step < len(snaps):
        raise ValueError(f"step must be in 0..{len(snaps) - 1}, got {step}")
    g = snaps[step]
    if step == 0:
        title = f"input graph: {len(g)} nodes"
        new: set[str] = set()
    else:
        rec = result.records[step - 1]
        title = f"after {rec.pass_name} (iteration {rec.iteration}): {rec.nodes_before} -> {rec.nodes_after} nodes"
        new = _new_nodes(snaps[step - 1], g)
    return plot_graph(g, title=title, highlight=new, height=height)


def pipeline_stepper(result: Any, height: int = 520) -> Any:
    """An ipywidgets view: a slider over the pipeline's steps, the graph at that step and the stats table."""
    import ipywidgets as widgets
    import plotly.graph_objects as go

    rows = result.table()
    slider = widgets.IntSlider(value=0, min=0, max=len(result.snapshots) - 1, description="step",
                               continuous_update=False, layout=widgets.Layout(width="60%"))
    label = widgets.HTML()
    table = widgets.HTML()
    fig = go.FigureWidget(pipeline_figure(result, 0, height))

    def show(step: int) -> None:
        new = pipeline_figure(result, step, height)
        with fig.batch_update():
            fig.data = ()
            for tr in new.data:
                fig.add_trace(tr)
            fig.layout = new.layout
        g = result.snapshots[step]
        ops = ", ".join(f"{k}: {v}" for k, v in g.op_counts().items())
        label.value = f"<b>{len(g)} nodes</b> &nbsp; {html.escape(ops)}"
        table.value = stats_table_html(rows, step - 1 if step else None)

    slider.observe(lambda ch: show(ch["new"]), names="value")
    show(0)
    return widgets.VBox([slider, label, fig, table])


def plot_memory_plan(plan: Any, title: str | None = None, height: int = 420, max_buffers: int = 400) -> Any:
    """Buffers of a MemoryPlan as rectangles: x = lifetime in steps, y = byte range in the arena."""
    import plotly.graph_objects as go

    ivs = sorted(plan.intervals, key=lambda iv: iv.start)[:max_buffers]
    xs: list[float | None] = []
    ys: list[float | None] = []
    hover: list[str | None] = []
    for iv in ivs:
        off = plan.offsets[iv.name] / 1024
        top = off + iv.size / 1024
        x0, x1 = iv.start - 0.45, iv.end + 0.45
        text = f"%{iv.name}<br>steps {iv.start}..{iv.end}<br>{iv.size / 1024:.1f} KiB at {off:.1f} KiB"
        xs += [x0, x1, x1, x0, x0, None]
        ys += [off, off, top, top, off, None]
        hover += [text] * 5 + [None]
    fig = go.Figure(go.Scatter(x=xs, y=ys, fill="toself", mode="lines", line=dict(width=1, color="#1f77b4"),
                               fillcolor="rgba(31,119,180,0.35)", text=hover, hoverinfo="text", name="buffers"))
    s = plan.summary()
    # the peak's label above its line at the left, the bound's below its line at the right: when the plan meets the
    # bound the two lines coincide, and labels on one spot would be drawn over each other
    for value, name, dash, spot in ((s["plan_bytes"], "plan peak", "solid", "top left"),
                                    (s["lower_bound_bytes"], "lower bound", "dot", "bottom right")):
        fig.add_hline(y=value / 1024, line_dash=dash, line_color="#d62728" if name == "plan peak" else "#2ca02c",
                      annotation_text=f"{name}: {value / 1024:.0f} KiB", annotation_position=spot)
    fig.update_layout(
        title=title or (f"memory plan: {s['buffers']} buffers, peak {s['plan_bytes'] / 1024:.0f} KiB "
                        f"(no reuse {s['no_reuse_bytes'] / 1024:.0f} KiB)"),
        xaxis_title="execution step", yaxis_title="arena offset (KiB)", height=height, showlegend=False,
        margin=dict(l=60, r=20, t=50, b=40),
    )
    return fig
