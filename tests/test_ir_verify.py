"""The verifier: each kind of ill-formed graph is caught, and the message names the node and the value."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from infopt.ir import Graph, GraphError, Node, TensorType, check, graph_diff, verify
from tests.strategies import graphs, random_graph


def chain() -> Graph:
    """x -> Relu (r1: %a) -> Add with constant %c (a1: %b) -> Neg (n1: %out)."""
    g = Graph("chain")
    g.add_input("x", TensorType((2, 3)))
    g.add_initializer("c", np.ones((3,), np.float32))
    g.add_node("Relu", ["x"], outputs=["a"], name="r1")
    g.add_node("Add", ["a", "c"], outputs=["b"], name="a1")
    g.add_node("Neg", ["b"], outputs=["out"], name="n1")
    g.outputs = ["out"]
    return g


def fails(g: Graph, *words: str) -> str:
    """verify raises a GraphError whose message has all ``words``; check() lists that problem too."""
    with pytest.raises(GraphError) as info:
        verify(g)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    assert any(all(w in p for w in words) for p in check(g)), check(g)
    return msg


@settings(max_examples=30, deadline=None)
@given(graphs())
def test_well_formed_graphs_pass(g):
    assert check(g) == []
    verify(g)


def test_defined_twice_by_two_nodes():
    g = chain()
    g.nodes[1].outputs = ["a"]
    g.nodes[2].inputs = ["a"]
    fails(g, "%a", "defined twice", "node r1", "node a1")


def test_defined_by_node_and_input_or_initializer():
    g = chain()
    g.nodes[0].outputs = ["x"]
    g.nodes[1].inputs = ["x", "c"]
    fails(g, "%x", "defined twice", "graph input", "node r1")
    g = chain()
    g.nodes[1].outputs = ["c"]
    g.nodes[2].inputs = ["c"]
    fails(g, "%c", "defined twice", "initializer", "node a1")
    g = chain()
    g.inputs.append("c")
    fails(g, "%c", "defined twice", "graph input", "initializer")


def test_use_before_definition_in_stored_order():
    g = chain()
    g.nodes = [g.nodes[1], g.nodes[0], g.nodes[2]]
    msg = fails(g, "node a1", "%a", "before its definition", "defined later by node r1")
    assert "cycle" not in msg
    g.nodes = g.toposort()  # a valid order fixes it
    verify(g)


def test_dangling_use_and_undefined_output():
    g = chain()
    g.nodes[2].inputs = ["nowhere"]
    fails(g, "node n1", "%nowhere", "never defined")
    g = chain()
    g.outputs = ["out", "ghost"]
    fails(g, "graph output %ghost", "never defined")


def test_cycle_and_self_loop():
    g = chain()
    g.nodes[0].inputs = ["b"]  # r1 reads a1's output, a1 reads r1's output
    msg = fails(g, "cycle", "%")
    assert "r1" in msg or "a1" in msg
    g = chain()
    g.nodes[2].inputs = ["out"]
    fails(g, "node n1", "%out", "cycle")


def test_unknown_op_and_arity():
    g = chain()
    g.nodes[2].op = "Frobnicate"
    fails(g, "'Frobnicate'", "node n1")
    g = chain()
    g.nodes[1].inputs = ["a"]
    fails(g, "node a1", "Add takes 2..2 inputs, got 1", "%a")


def test_type_consistency():
    g = chain()
    g.types["b"] = TensorType((2, 4))
    fails(g, "node a1", "%b", "stored as f32[2,4]", "inference gives f32[2,3]")
    g = chain()
    g.types["a"] = TensorType((2, 3), "f64")
    assert any("%a" in p and "r1" in p for p in check(g))
    g = chain()
    del g.types["out"]
    fails(g, "node n1", "%out", "no type")
    g = chain()
    del g.types["x"]
    fails(g, "graph input %x", "no declared type")
    g = chain()
    g.initializers["c"] = np.ones((4,), np.float32)
    fails(g, "initializer %c", "f32[4]")


def test_inference_errors_are_reported_with_the_node():
    g = chain()
    g.initializers["c"] = np.ones((5,), np.float32)
    g.types["c"] = TensorType((5,))
    fails(g, "node a1", "(2, 3) and (5,)")


def test_check_lists_every_problem_and_verify_counts_them():
    g = chain()
    g.nodes[2].inputs = ["nowhere"]
    g.outputs = ["out", "ghost"]
    g.nodes.append(Node("Mystery", ["x"], ["m"], name="q"))
    problems = check(g)
    assert len(problems) >= 3
    with pytest.raises(GraphError, match=r"and \d+ more problems"):
        verify(g)


def test_graph_diff_sees_each_kind_of_difference():
    g = random_graph(3, 6)
    assert graph_diff(g, g.copy()) == []
    h = g.copy()
    h.nodes[0].attrs["alpha"] = 1
    assert any("attrs" in d for d in graph_diff(g, h))
    h = g.copy()
    h.nodes[-1].name = "renamed"
    assert any("name" in d for d in graph_diff(g, h))
    h = g.copy()
    k = next(iter(h.initializers))
    h.initializers[k] = h.initializers[k] + 1
    assert any(k in d for d in graph_diff(g, h))
    a, b = g.copy(), g.copy()
    a.nodes[0].attrs["v"], b.nodes[0].attrs["v"] = 1, 1.0
    assert graph_diff(a, b), "an int attribute must not equal a float one"
    a.nodes[0].attrs["v"], b.nodes[0].attrs["v"] = [1.5, float("nan")], (1.5, float("nan"))
    assert graph_diff(a, b) == []
