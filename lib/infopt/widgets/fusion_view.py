"""The fusion explorer: pick a chain of elementwise ops; see the unfused and fused kernels, the bytes each moves,
and their measured times side by side.

``infopt.runtime.schedule_bench.fusion_compare(n, ops)`` builds both versions, checks they agree and times them;
``fusion_figure`` draws its bytes and times as bars; ``fusion_explorer`` wires a multi-select of ops and a size
slider to them.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def fusion_figure(res: dict[str, Any], height: int = 320) -> Any:
    """Two bar charts: bytes moved, and measured milliseconds (when timed), unfused vs fused."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    cols = 2 if "ms" in res else 1
    fig = make_subplots(rows=1, cols=cols, subplot_titles=["bytes moved (MB)", "time (ms, median)"][:cols])
    kinds = ["unfused", "fused"]
    fig.add_trace(go.Bar(x=kinds, y=[res["bytes"][k] / 1e6 for k in kinds], marker_color=["#d62728", "#2ca02c"],
                         showlegend=False), row=1, col=1)
    if "ms" in res:
        fig.add_trace(go.Bar(x=kinds, y=[res["ms"][k] for k in kinds], marker_color=["#d62728", "#2ca02c"],
                             showlegend=False), row=1, col=2)
    ratio = res["bytes"]["unfused"] / res["bytes"]["fused"]
    extra = f", measured {res['ms']['unfused'] / res['ms']['fused']:.1f}x faster" if "ms" in res else ""
    fig.update_layout(height=height, title=f"{' -> '.join(res['ops'])} on {res['n']:,} floats: fusion moves "
                      f"{ratio:.1f}x fewer bytes{extra}")
    return fig


def fusion_explorer(n: int = 1 << 20) -> Any:
    """ipywidgets: choose the ops of a chain and the size; shows both kernels, the bytes and the times."""
    import ipywidgets as widgets

    from ..runtime.schedule_bench import fusion_compare
    from ..schedule.chains import OPS

    ops = widgets.SelectMultiple(options=sorted(OPS), value=("scale", "bias", "relu"), description="ops", rows=6)
    size = widgets.IntSlider(value=20, min=12, max=23, description="log2 n", continuous_update=False)
    out = widgets.Output()
    text = widgets.HTML()

    def update(*_: Any) -> None:
        chosen = list(ops.value) or ["relu"]
        res = fusion_compare(1 << size.value, chosen)
        text.value = (f"<pre>{res['fused']}</pre><p>unfused: {res['loops']['unfused']} loops, "
                      f"{res['bytes']['unfused']:,} bytes; fused: 1 loop, {res['bytes']['fused']:,} bytes; "
                      f"max |difference| {res['max_abs_diff']:.2e}</p>")
        out.clear_output(wait=True)
        with out:
            fusion_figure(res).show()

    ops.observe(update, names="value")
    size.observe(update, names="value")
    size.value = max(12, min(23, int(np.log2(max(n, 1)))))
    box = widgets.VBox([widgets.HBox([ops, size]), out, text])
    box.update = update  # type: ignore[attr-defined]
    update()
    return box
