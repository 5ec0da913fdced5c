"""A plotly drawing of a Graph: a layered DAG, nodes coloured by op kind, hover shows types and shapes.

Layout: each node's layer is its longest path from the graph inputs; inside a layer nodes are ordered
by a few sweeps of the barycenter heuristic (the mean position of their neighbours), which removes most
edge crossings in residual nets. Layers run top to bottom, like Netron.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.facts import FactTable
from ..ir.graph import Graph, Node
from ..ir.ops import OPS

KIND_COLORS: dict[str, str] = {
    "conv/matmul": "#1f77b4", "normalization": "#9467bd", "activation": "#2ca02c", "pooling/reduce": "#ff7f0e",
    "arithmetic": "#d62728", "shape/layout": "#8c564b", "no-op": "#7f7f7f", "recurrent": "#bcbd22",
    "quantize": "#aec7e8", "fused": "#17a589", "offload": "#ff9896", "other": "#e377c2", "input/output": "#17becf",
}
# Which colour group each op is drawn in (one colour per kind, so a picture of ResNet reads at a glance).
VIEW_KINDS: FactTable[str] = FactTable("view kind", known=lambda op: op in OPS,
                                       known_hint="Define the op in infopt.ir.ops first.")


def view_kind(kind: str, *ops: str, replace: bool = False) -> None:
    """Draw ``ops`` in the colour of ``kind`` (one of KIND_COLORS); an op gets one view kind."""
    if kind not in KIND_COLORS or kind in ("other", "input/output"):
        raise ValueError(f"view kind {kind!r} is not one of {[k for k in KIND_COLORS if k not in ('other', 'input/output')]}")
    VIEW_KINDS.register_all(ops, kind, replace)


view_kind("conv/matmul", "Conv", "MatMul", "Gemm", "FusedConv", "ConvNHWC", "NchwcConv")
view_kind("normalization", "BatchNormalization", "LayerNormalization", "Softmax")
view_kind("activation", "Relu", "Gelu", "Erf", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish")
view_kind("pooling/reduce", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean", "ReduceSum", "ReduceMax",
          "ReduceMin", "ReduceProd", "NchwcMaxPool", "NchwcGlobalAveragePool")
view_kind("arithmetic", "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Max",
          "Min", "Sum", "Where", "Equal", "Less")
view_kind("shape/layout", "Reshape", "Transpose", "Flatten", "Concat", "Split", "Squeeze", "Unsqueeze", "Slice",
          "Gather", "Expand", "Shape", "Size", "Cast", "CastLike", "ConstantOfShape", "ReorderInput", "ReorderOutput")
view_kind("no-op", "Identity", "Dropout", "Constant")
view_kind("recurrent", "GRU", "LSTM")
view_kind("quantize", "QuantizeLinear", "DequantizeLinear")
view_kind("fused", "FusedElementwise")
view_kind("offload", "AccelCall")


def op_kind(op: str) -> str:
    """The colour group of an op ('conv/matmul', 'activation', ...; 'other' for an op without a view kind)."""
    return VIEW_KINDS.get(op, "other")


def layer_layout(graph: Graph, sweeps: int = 4) -> dict[str, tuple[float, int]]:
    """Position of every node (by name) and pseudo-node ('in:x', 'out:y') as (x, layer).

    Layer = longest path from the graph inputs (nodes that read only constants sit just above their first
    reader); x orders a layer by barycenter sweeps to reduce crossings.
    """
    order = graph.toposort()
    producers = {o: n for n in order for o in n.outputs}
    layer: dict[str, int] = {f"in:{v}": 0 for v in graph.inputs}
    preds: dict[str, list[str]] = {}
    for n in order:
        ps = [producers[i].name if i in producers else f"in:{i}" for i in n.inputs if i and i not in graph.initializers]
        ps = [p for p in ps if p in layer]
        preds[n.name] = ps
        layer[n.name] = 1 + max((layer[p] for p in ps), default=0)
    for v in graph.outputs:
        key = f"out:{v}"
        src = producers[v].name if v in producers else f"in:{v}"
        preds[key] = [src] if src in layer else []
        layer[key] = 1 + max((layer[p] for p in preds[key]), default=0)
    succs: dict[str, list[str]] = {k: [] for k in layer}
    for k, ps in preds.items():
        for p in ps:
            succs[p].append(k)

    # nodes that read only constants (Constant nodes, shape arithmetic) sit just above their first reader
    for n in reversed(order):
        if not preds[n.name] and succs[n.name]:
            layer[n.name] = min(layer[s] for s in succs[n.name]) - 1

    rows: dict[int, list[str]] = {}
    for k, lv in layer.items():
        rows.setdefault(lv, []).append(k)
    pos = {k: float(i) for row in rows.values() for i, k in enumerate(row)}

    def sweep(levels: list[int], nbrs: dict[str, list[str]]) -> None:
        for lv in levels:
            row = rows[lv]
            bary = {k: (np.mean([pos[p] for p in nbrs.get(k, [])]) if nbrs.get(k) else pos[k]) for k in row}
            row.sort(key=lambda k: (bary[k], pos[k]))
            for i, k in enumerate(row):
                pos[k] = float(i)

    levels = sorted(rows)
    for _ in range(sweeps):
        sweep(levels[1:], preds)
        sweep(levels[-2::-1], succs)
    # coordinates: each node as close as possible to the mean x of its predecessors, keeping the order
    # and a spacing of 1, so a straight chain stays a straight vertical line
    out: dict[str, tuple[float, int]] = {}
    for lv in levels:
        row = rows[lv]
        want = [np.mean([out[p][0] for p in preds.get(k, []) if p in out]) if any(p in out for p in preds.get(k, []))
                else i - (len(row) - 1) / 2 for i, k in enumerate(row)]
        xs: list[float] = []
        for w in want:
            xs.append(w if not xs else max(w, xs[-1] + 1.0))
        shift = float(np.mean(np.subtract(want, xs)))
        for k, x in zip(row, xs):
            out[k] = (x + shift, lv)
    return out


def _fmt_attr(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)} {v.dtype}" if v.size > 8 else np.array2string(v, separator=",")
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _hover(graph: Graph, n: Node) -> str:
    def typed(v: str) -> str:
        t = graph.types.get(v)
        tag = " (const)" if v in graph.initializers else ""
        return f"%{v}: {t if t is not None else '?'}{tag}"

    lines = [f"<b>{n.op}</b>  {n.name}"]
    lines += ["in  " + typed(v) for v in n.inputs if v]
    lines += ["out " + typed(v) for v in n.outputs if v]
    lines += [f"{k} = {_fmt_attr(v)}" for k, v in n.attrs.items()]
    return "<br>".join(lines)


def plot_graph(
    graph: Graph,
    title: str | None = None,
    highlight: set[str] | None = None,
    height: int | None = None,
    show_labels: bool | None = None,
) -> Any:
    """A plotly Figure of ``graph``: layered top-down DAG, nodes coloured by op kind, hover shows op/types/attrs.

    ``highlight`` names nodes to ring in black (e.g. the redundant ones a pass would remove).
    """
    import plotly.graph_objects as go

    if not isinstance(graph, Graph):
        raise TypeError(f"plot_graph needs an infopt.ir.Graph, got {type(graph).__name__} (use from_onnx first)")
    highlight = set(highlight or ())
    unknown = highlight - {n.name for n in graph.nodes}
    if unknown:
        raise ValueError(f"highlight names nodes not in the graph: {sorted(unknown)[:5]}")
    pos = layer_layout(graph)
    nodes = {n.name: n for n in graph.nodes}
    producers = graph.producers()
    n_layers = 1 + max((lv for _, lv in pos.values()), default=0)
    if show_labels is None:
        show_labels = len(graph.nodes) <= 150

    ex: list[float | None] = []
    ey: list[float | None] = []

    def edge(src: str, dst: str) -> None:
        (x0, l0), (x1, l1) = pos[src], pos[dst]
        if l1 - l0 > 1:  # a long edge (a residual skip): bow it out to the side so it does not hide behind nodes
            side = min(x0, x1) - 0.45 if x0 < x1 - 0.25 else max(x0, x1) + 0.45
            ex.extend([x0, side, side, x1, None])
            ey.extend([-l0, -l0 - 0.6, -l1 + 0.6, -l1, None])
        else:
            ex.extend([x0, x1, None])
            ey.extend([-l0, -l1, None])

    for n in graph.nodes:
        for v in n.inputs:
            if not v or v in graph.initializers:
                continue
            src = producers[v].name if v in producers else f"in:{v}"
            if src in pos:
                edge(src, n.name)
    for v in graph.outputs:
        src = producers[v].name if v in producers else f"in:{v}"
        if src in pos:
            edge(src, f"out:{v}")
    traces: list[Any] = [go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#b0b0b0", width=1),
                                    hoverinfo="skip", showlegend=False)]

    groups: dict[str, list[str]] = {}
    for k in pos:
        kind = "input/output" if k.startswith(("in:", "out:")) else op_kind(nodes[k].op)
        groups.setdefault(kind, []).append(k)
    for kind in [*KIND_COLORS]:
        keys = groups.get(kind, [])
        if not keys:
            continue
        hover, labels = [], []
        for k in keys:
            if k in nodes:
                hover.append(_hover(graph, nodes[k]))
                labels.append(nodes[k].op)
            else:
                v = k.split(":", 1)[1]
                hover.append(f"<b>{'graph input' if k.startswith('in:') else 'graph output'}</b><br>%{v}: "
                             f"{graph.types.get(v, '?')}")
                labels.append(v)
        traces.append(go.Scatter(
            x=[pos[k][0] for k in keys], y=[-pos[k][1] for k in keys],
            mode="markers+text" if show_labels else "markers", text=labels, textposition="middle right",
            textfont=dict(size=9), hovertext=hover, hoverinfo="text", name=kind,
            marker=dict(size=11, color=KIND_COLORS[kind], symbol="square" if kind == "input/output" else "circle",
                        line=dict(width=[3 if k in highlight else 0.5 for k in keys],
                                  color=["black" if k in highlight else "white" for k in keys])),
        ))
    lo = min((x for x, _ in pos.values()), default=0.0)
    hi = max((x for x, _ in pos.values()), default=0.0)
    fig = go.Figure(traces)
    fig.update_layout(
        title=title or f"{graph.name}: {len(graph.nodes)} nodes, {len(graph.initializers)} constants",
        height=height or max(400, min(4000, 28 * n_layers + 120)),
        xaxis=dict(visible=False, range=[min(lo - 1.0, -3.0), max(hi + 2.5, 3.0)]), yaxis=dict(visible=False), plot_bgcolor="white",
        hovermode="closest", legend=dict(title="op kind"), margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig
