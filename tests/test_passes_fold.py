"""Tests for infopt.passes.fold: constant folding (all-constant nodes and static Shape) preserves meaning."""
import numpy as np

from infopt.ir import Graph, TensorType
from infopt.passes import ConstantFolding, DeadCodeElimination, PassManager
from infopt.passes.equivalence import max_output_error


def _graph(rng) -> Graph:
    g = Graph("fold")
    x = g.add_input("x", TensorType((2, 3, 4)))
    a = g.add_initializer("a", rng.standard_normal((3, 4)).astype(np.float32))
    b = g.add_initializer("b", rng.standard_normal((3, 4)).astype(np.float32))
    s = g.add_node("Add", [a, b], outputs=["s"]).outputs[0]
    e = g.add_node("Exp", [s], outputs=["e"]).outputs[0]
    y = g.add_node("Mul", [x, e], outputs=["y"]).outputs[0]
    shp = g.add_node("Shape", [y], outputs=["shp"]).outputs[0]
    flat = g.add_initializer("minus1", np.array([-1], dtype=np.int64))
    r = g.add_node("Reshape", [y, flat], outputs=["r"]).outputs[0]
    back = g.add_node("Reshape", [r, shp], outputs=["back"]).outputs[0]
    g.outputs = [back]
    return g


def test_folds_constant_subgraphs_and_static_shapes():
    rng = np.random.default_rng()
    g = _graph(rng)
    res = ConstantFolding().run(g)
    assert res.changed and res.stats["folded"] == 3  # Add, Exp, Shape
    ops = [n.op for n in res.graph.nodes]
    assert ops == ["Mul", "Reshape", "Reshape"]
    np.testing.assert_allclose(res.graph.initializers["e"], np.exp(g.initializers["a"] + g.initializers["b"]), rtol=1e-6)
    assert "a" not in res.graph.initializers  # no longer read
    assert max_output_error(g, res.graph, seed=int(rng.integers(1 << 30))) <= 1e-6


def test_keeps_graph_outputs_and_large_results_as_computation():
    g = Graph("keep")
    c = g.add_initializer("c", np.ones((4, 4), np.float32))
    big = g.add_node("Exp", [c], outputs=["big"]).outputs[0]
    x = g.add_input("x", TensorType((4, 4)))
    g.add_node("Add", [x, big], outputs=["y"])
    g.add_node("Neg", [c], outputs=["out2"])
    g.outputs = ["y", "out2"]
    res = ConstantFolding(max_bytes=32).run(g)
    assert not res.changed and "too large" in res.reason
    res = ConstantFolding().run(g)
    assert [n.op for n in res.graph.nodes] == ["Add", "Neg"]  # Neg defines a graph output: kept


def test_folding_then_dce_in_a_manager_is_verified():
    rng = np.random.default_rng()
    g = _graph(rng)
    out = PassManager([ConstantFolding(), DeadCodeElimination()], fixpoint=True).run(g)
    assert len(out.graph) == 3 and out.records[0].nodes_after == 3
