"""Tests for infopt.passes.dce: dead nodes and constants go, outputs and inputs stay."""
import numpy as np

from infopt.ir import Graph, TensorType
from infopt.passes import DeadCodeElimination, live_nodes
from infopt.passes.equivalence import max_output_error


def _graph() -> Graph:
    g = Graph("dce")
    x = g.add_input("x", TensorType((3, 5)))
    unused_in = g.add_input("unused", TensorType((3, 5)))
    w = g.add_initializer("w", np.random.default_rng().standard_normal((5, 2)).astype(np.float32))
    g.add_initializer("never_read", np.zeros(7, np.float32))
    a = g.add_node("Relu", [x], outputs=["a"]).outputs[0]
    dead1 = g.add_node("Exp", [a], outputs=["dead1"]).outputs[0]
    g.add_node("MatMul", [dead1, w], outputs=["dead2"])
    g.add_node("Neg", [unused_in], outputs=["dead3"])
    b = g.add_node("Sigmoid", [a], outputs=["b"]).outputs[0]
    c = g.add_node("Tanh", [a], outputs=["c"]).outputs[0]
    g.outputs = [b, c]
    return g


def test_removes_exactly_the_nodes_no_output_needs():
    g = _graph()
    assert [n.op for n in live_nodes(g)] == ["Relu", "Sigmoid", "Tanh"]
    res = DeadCodeElimination().run(g)
    assert res.stats == {"removed_nodes": 3, "removed_constants": 2}
    assert [n.op for n in res.graph.nodes] == ["Relu", "Sigmoid", "Tanh"]
    assert res.graph.outputs == ["b", "c"] and res.graph.inputs == ["x", "unused"]
    assert not res.graph.initializers and "dead1" not in res.graph.types
    assert max_output_error(g, res.graph) == 0.0


def test_an_output_computed_by_an_otherwise_dead_chain_is_kept():
    g = _graph()
    g.outputs = ["dead2"]  # now the MatMul chain is the live one
    res = DeadCodeElimination().run(g)
    assert [n.op for n in res.graph.nodes] == ["Relu", "Exp", "MatMul"]
    assert "w" in res.graph.initializers


def test_nothing_dead_means_unchanged_with_reason():
    g = DeadCodeElimination()(_graph())
    res = DeadCodeElimination().run(g)
    assert not res.changed and res.graph is g and "reaches an output" in res.reason
