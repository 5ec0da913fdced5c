"""Views of the serving engines: the block-table replay and the batching explorer.

``block_table_figure(stats, step)`` draws the paged KV cache after one engine step: every physical block a cell,
coloured by the sequence that holds it (dark when several share it), with its fill; the title says who decoded,
was prefilled, admitted, preempted, swapped out or finished. ``block_table_view(stats)`` replays a run's per-step
log (``infopt.llm.run_stats.RunStats.steps``) with a step slider and a play button: sequences grow, share blocks and
are preempted. ``batching_explorer(cost)`` has sliders for the batch limit and the arrival rate and draws the
throughput/latency curve that ``infopt.llm.engine.batching_curve`` computes (the model-free engine with a fitted
cost model, so it moves in a second). Views only: the figures come from the library's runs.
"""
from __future__ import annotations

from typing import Any, Sequence

PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
           "#79706e"]
SHARED = "#222222"


def _grid(stats: Any, step: int, cols: int) -> tuple[list, list, list]:
    """z (colour index: 0 free, 1..10 a sequence, 11 shared), text and hover for each block of the pool."""
    st = stats.steps[step]
    owners: dict[int, list[int]] = {}
    fill: dict[int, int] = {}
    bs = stats.block_size
    for sid, table in st.tables.items():
        n = st.lengths.get(sid, len(table) * bs)
        for i, b in enumerate(table):
            owners.setdefault(b, []).append(sid)
            fill[b] = max(fill.get(b, 0), min(bs, n - i * bs))
    rows = -(-stats.num_blocks // cols)
    z = [[0] * cols for _ in range(rows)]
    text = [[""] * cols for _ in range(rows)]
    hover = [[""] * cols for _ in range(rows)]
    for b in range(rows * cols):
        r, c = divmod(b, cols)
        if b >= stats.num_blocks:
            z[r][c], hover[r][c] = None, ""
            continue
        who = owners.get(b, [])
        if not who:
            hover[r][c] = f"block {b}: free"
            continue
        z[r][c] = 11 if len(who) > 1 else 1 + who[0] % 10
        # a cell is a sixteenth of the figure wide: a shared block names its first sequence and how many more
        # share it ("s0+3"); the hover lists them all
        text[r][c] = (f"s{who[0]}" if len(who) == 1 else f"s{who[0]}+{len(who) - 1}") + f"<br>{fill.get(b, 0)}/{bs}"
        hover[r][c] = f"block {b}: " + ("shared by " if len(who) > 1 else "") + ", ".join(
            f"seq {s}" for s in who) + f"; {fill.get(b, 0)} of {bs} slots filled"
    return z, text, hover


def _colorscale() -> list:
    cs = [[0.0, "#f2f2f2"], [1 / 12, "#f2f2f2"]]
    for i, c in enumerate(PALETTE + [SHARED], start=1):
        cs += [[i / 12, c], [(i + 1) / 12, c]]
    return cs


def step_title(stats: Any, step: int) -> str:
    """One line saying what the step did."""
    st = stats.steps[step]
    parts = [f"step {st.step} (t = {st.clock_s:.3f} s)"]
    if st.decoded:
        parts.append(f"decode {st.decoded}")
    if st.prefilled:
        parts.append("prefill " + ", ".join(f"s{k}:{v}" for k, v in st.prefilled.items()))
    for name in ("admitted", "preempted", "finished", "swapped"):
        if getattr(st, name):
            parts.append(f"{name} {getattr(st, name)}")
    used = stats.num_blocks - st.free_blocks
    parts.append(f"{used}/{stats.num_blocks} blocks used")
    return " · ".join(parts)


def block_table_figure(stats: Any, step: int = 0, cols: int = 16, height: int | None = None) -> Any:
    """A plotly FigureWidget of the block pool after ``step`` of ``stats`` (a ``RunStats`` with a step log)."""
    import plotly.graph_objects as go

    if not stats.steps:
        raise ValueError("this RunStats has no step log to draw (the Hugging Face baseline keeps none)")
    if not 0 <= step < len(stats.steps):
        raise ValueError(f"step must be in [0, {len(stats.steps)}), got {step}")
    z, text, hover = _grid(stats, step, cols)
    rows = len(z)
    fig = go.FigureWidget(go.Heatmap(z=z, text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text",
                                     zmin=0, zmax=12, colorscale=_colorscale(), showscale=False, xgap=2, ygap=2))
    fig.update_layout(title=dict(text=step_title(stats, step), font=dict(size=12)),
                      height=height or 120 + 42 * rows, margin=dict(l=50, r=10, t=50, b=30),
                      xaxis=dict(title="block (column)", dtick=1, showgrid=False),
                      yaxis=dict(title="row", autorange="reversed", dtick=1, showgrid=False))
    return fig


def update_block_table(fig: Any, stats: Any, step: int, cols: int = 16) -> None:
    """Redraw ``fig`` (from ``block_table_figure``) at another step."""
    z, text, hover = _grid(stats, step, cols)
    with fig.batch_update():
        fig.data[0].z, fig.data[0].text, fig.data[0].hovertext = z, text, hover
        fig.layout.title.text = step_title(stats, step)


def block_table_view(stats: Any, cols: int = 16, interval_ms: int = 300) -> Any:
    """ipywidgets: a step slider (with a play button) replaying the block tables of a run's log."""
    import ipywidgets as widgets

    fig = block_table_figure(stats, 0, cols)
    last = len(stats.steps) - 1
    slider = widgets.IntSlider(value=0, min=0, max=last, description="step", continuous_update=True,
                               layout=widgets.Layout(width="70%"))
    play = widgets.Play(value=0, min=0, max=last, interval=interval_ms, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    legend = widgets.HTML("<small>cell = a physical KV block: its sequence(s) and filled slots; "
                          "<b>dark</b> = shared by several sequences (copy-on-write on the next write); "
                          "grey = free</small>")

    def show(change: Any) -> None:
        update_block_table(fig, stats, change["new"], cols)

    slider.observe(show, names="value")
    box = widgets.VBox([widgets.HBox([play, slider]), legend, fig])
    box.figure, box.slider = fig, slider  # type: ignore[attr-defined]  # tests and notebooks drive them
    return box


METRICS = {"ttft_p99": "p99 time to first token (s)", "tpot_p99": "p99 time per output token (s)",
           "latency_p99": "p99 request latency (s)", "ttft_p50": "p50 time to first token (s)",
           "tpot_p50": "p50 time per output token (s)"}


def batching_figure(rows: Sequence[dict], current: int, metric: str = "latency_p99", rate: float | None = None) -> Any:
    """Throughput against a latency percentile, one point per batch limit (``batching_curve``'s rows), the
    current batch limit ringed."""
    import plotly.graph_objects as go

    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    fig = go.FigureWidget()
    _draw_batching(fig, rows, current, metric, rate)
    return fig


def point_labels(rows: Sequence[dict], metric: str, near: float = 0.04) -> list[str]:
    """The batch limit beside each point of the curve; points that land within `near` of the axes' spans of each
    other (a larger limit the arrivals never fill serves exactly as the smaller one) share one label, "16 = 64",
    on the first of them, instead of labels printed over each other."""
    xs = [float(r[metric]) for r in rows]
    ys = [float(r["throughput_tok_s"]) for r in rows]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    labels = [""] * len(rows)
    owner: list[int] = []   # the first point of each group
    for i in range(len(rows)):
        home = next((j for j in owner if abs(xs[i] - xs[j]) <= near * span_x and abs(ys[i] - ys[j]) <= near * span_y),
                    None)
        name = str(int(rows[i]["max_batch"]))
        if home is None:
            owner.append(i)
            labels[i] = name
        else:
            labels[home] += f" = {name}"
    return labels


def _draw_batching(fig: Any, rows: Sequence[dict], current: int, metric: str, rate: float | None) -> None:
    import plotly.graph_objects as go

    xs = [r[metric] for r in rows]
    ys = [r["throughput_tok_s"] for r in rows]
    labels = [f"max_batch {int(r['max_batch'])}" for r in rows]
    cur = next((r for r in rows if int(r["max_batch"]) == current), rows[-1])
    with fig.batch_update():
        fig.data = []
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers+text", text=point_labels(rows, metric),
                                 textposition="top left", hovertext=labels, name="batch limits"))
        fig.add_trace(go.Scatter(x=[cur[metric]], y=[cur["throughput_tok_s"]], mode="markers", name="current",
                                 marker=dict(size=18, symbol="circle-open", color="crimson", line=dict(width=3))))
        head = f"at {rate:g} req/s, " if rate is not None else ""
        fig.update_layout(
            title=dict(text=f"{head}max_batch {int(cur['max_batch'])}: {cur['throughput_tok_s']:.0f} tok/s, "
                            f"{METRICS[metric].split(' (')[0]} {cur[metric] * 1e3:.1f} ms", font=dict(size=13)),
            xaxis_title=METRICS[metric], yaxis_title="throughput (generated tokens/s)", height=420,
            showlegend=False, margin=dict(l=60, r=20, t=50, b=50))


def batching_explorer(cost: Any, batch_limits: Sequence[int] = (1, 2, 4, 8, 16, 32), rates: Sequence[float] = (
        5.0, 10.0, 20.0, 40.0, 80.0), n: int = 48, seed: int = 0, num_blocks: int = 256, block_size: int = 16,
        text: str | None = None, metric: str = "latency_p99") -> Any:
    """ipywidgets: a batch-limit slider and an arrival-rate slider over the throughput/latency curve of the
    continuous engine (``batching_curve`` with ``cost``), plus a menu for the latency measure."""
    import ipywidgets as widgets

    from infopt.llm.engine import batching_curve

    cache: dict[float, list[dict]] = {}

    def rows_for(rate: float) -> list[dict]:
        if rate not in cache:
            cache[rate] = batching_curve(cost, rate, batch_limits, n=n, seed=seed, num_blocks=num_blocks,
                                         block_size=block_size, text=text)
        return cache[rate]

    limits = [int(b) for b in batch_limits]
    batch = widgets.SelectionSlider(options=limits, value=limits[len(limits) // 2], description="batch limit",
                                    continuous_update=False)
    rate = widgets.SelectionSlider(options=[float(r) for r in rates], value=float(rates[len(rates) // 2]),
                                   description="req/s", continuous_update=False)
    measure = widgets.Dropdown(options=[(v, k) for k, v in METRICS.items()], value=metric, description="latency")
    info = widgets.HTML()
    fig = batching_figure(rows_for(rate.value), batch.value, metric, rate.value)

    def update(*_: Any) -> None:
        rows = rows_for(rate.value)
        _draw_batching(fig, rows, batch.value, measure.value, rate.value)
        cur = next(r for r in rows if int(r["max_batch"]) == batch.value)
        info.value = (f"<b>max_batch {batch.value}</b> at {rate.value:g} req/s: {cur['throughput_tok_s']:.0f} tok/s, "
                      f"TTFT p50/p99 {cur['ttft_p50'] * 1e3:.0f}/{cur['ttft_p99'] * 1e3:.0f} ms, "
                      f"TPOT p50/p99 {cur['tpot_p50'] * 1e3:.1f}/{cur['tpot_p99'] * 1e3:.1f} ms, "
                      f"peak {cur['peak_blocks']:.0f} blocks, {cur['preemptions']:.0f} preemptions")

    for w in (batch, rate, measure):
        w.observe(update, names="value")
    update()
    box = widgets.VBox([widgets.HBox([batch, rate, measure]), info, fig])
    box.figure, box.update = fig, update  # type: ignore[attr-defined]
    box.controls = {"batch": batch, "rate": rate, "measure": measure}  # type: ignore[attr-defined]
    return box
