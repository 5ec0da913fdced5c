"""The plotly graph view: layering, straight chains, colours by op kind, hover text, highlights."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.ir.onnx_io import from_onnx
from infopt.models import resnet18_onnx
from infopt.widgets.graph_view import KIND_COLORS, layer_layout, op_kind, plot_graph


@pytest.fixture(scope="module")
def resnet_graph() -> Graph:
    return from_onnx(resnet18_onnx(do_constant_folding=False))


def random_dag(rng, n: int) -> Graph:
    """A random DAG of Add/Relu nodes over one input, every node reading earlier values."""
    g = Graph("rand")
    vals = [g.add_input("x", TensorType((2, 3)))]
    for _ in range(n):
        if rng.random() < 0.5:
            a, b = rng.choice(len(vals), 2)
            vals.append(g.add_node("Add", [vals[a], vals[b]]).outputs[0])
        else:
            vals.append(g.add_node("Relu", [vals[int(rng.integers(len(vals)))]]).outputs[0])
    g.outputs.append(vals[-1])
    return g


def test_layers_are_longest_paths():
    rng = np.random.default_rng()
    for _ in range(5):
        g = random_dag(rng, int(rng.integers(3, 30)))
        pos = layer_layout(g)
        prod = g.producers()
        for n in g.nodes:
            preds = [pos[prod[i].name][1] if i in prod else 0 for i in n.inputs]
            assert pos[n.name][1] == 1 + max(preds), f"node {n.name} not at 1 + max(pred layers)"
        for lv in {lv for _, lv in pos.values()}:
            xs = sorted(x for x, l in pos.values() if l == lv)
            assert all(b - a >= 1 - 1e-9 for a, b in zip(xs, xs[1:])), "nodes of one layer overlap"


def test_chain_is_straight():
    g = Graph("chain")
    v = g.add_input("x", TensorType((4,)))
    for _ in range(6):
        v = g.add_node("Relu", [v]).outputs[0]
    g.outputs.append(v)
    xs = {x for x, _ in layer_layout(g).values()}
    assert len(xs) == 1


def test_resnet_figure_has_every_node_with_hover_types(resnet_graph):
    fig = plot_graph(resnet_graph)
    markers = [t for t in fig.data if t.mode and "markers" in t.mode]
    n_points = sum(len(t.x) for t in markers)
    assert n_points == len(resnet_graph.nodes) + len(resnet_graph.inputs) + len(resnet_graph.outputs)
    hover = "\n".join(h for t in markers for h in t.hovertext)
    conv = next(n for n in resnet_graph.nodes if n.op == "Conv")
    assert conv.name in hover and str(resnet_graph.types[conv.outputs[0]]) in hover
    assert "kernel_shape" in hover
    colors = {t.name: t.marker.color for t in markers}
    assert colors["conv/matmul"] == KIND_COLORS["conv/matmul"] and "normalization" in colors
    assert {t.name for t in markers} <= set(KIND_COLORS)


def test_residual_edges_are_drawn(resnet_graph):
    fig = plot_graph(resnet_graph)
    edges = fig.data[0]
    n_edges = sum(1 for n in resnet_graph.nodes for i in n.inputs if i and i not in resnet_graph.initializers)
    assert list(edges.x).count(None) == n_edges + len(resnet_graph.outputs)


def test_highlight_rings_nodes(resnet_graph):
    target = next(n for n in resnet_graph.nodes if n.op == "BatchNormalization")
    fig = plot_graph(resnet_graph, highlight={target.name})
    widths = [w for t in fig.data[1:] for w in t.marker.line.width]
    assert sorted(widths)[-1] == 3 and sorted(widths)[-2] < 3
    with pytest.raises(ValueError, match="not in the graph"):
        plot_graph(resnet_graph, highlight={"no_such_node"})


def test_op_kinds_and_bad_input():
    assert op_kind("Conv") == "conv/matmul" and op_kind("SomeFusedOp") == "other"
    with pytest.raises(TypeError, match="from_onnx"):
        plot_graph("not a graph")


def test_constant_nodes_sit_above_their_reader():
    g = Graph("c")
    v = g.add_input("x", TensorType((4,)))
    for _ in range(5):
        v = g.add_node("Relu", [v]).outputs[0]
    c = g.add_node("Constant", [], {"value": np.ones(4, np.float32)})
    add = g.add_node("Add", [v, c.outputs[0]])
    g.outputs.append(add.outputs[0])
    pos = layer_layout(g)
    assert pos[c.name][1] == pos[add.name][1] - 1
