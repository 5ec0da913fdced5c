"""Tests for infopt.passes.cse: equal computations merge (commutative inputs canonicalized), different ones do not."""
import numpy as np

from infopt.ir import Graph, TensorType
from infopt.passes import CommonSubexpressionElimination as CSE
from infopt.passes.equivalence import max_output_error


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_merges_commutative_duplicates_and_their_users():
    rng = np.random.default_rng()
    g = Graph("cse")
    x = g.add_input("x", TensorType((4, 6)))
    y = g.add_input("y", TensorType((4, 6)))
    s1 = g.add_node("Add", [x, y]).outputs[0]
    s2 = g.add_node("Add", [y, x]).outputs[0]  # same sum, inputs swapped
    e1 = g.add_node("Exp", [s1]).outputs[0]
    e2 = g.add_node("Exp", [s2]).outputs[0]  # becomes a duplicate once s2 merges into s1
    d1 = g.add_node("Sub", [x, y]).outputs[0]
    d2 = g.add_node("Sub", [y, x]).outputs[0]  # not commutative: must stay
    out = g.add_node("Concat", [e1, e2, d1, d2], {"axis": 0}).outputs[0]
    g.outputs = [out]
    res = CSE().run(g)
    assert res.stats["merged_nodes"] == 2
    assert res.graph.op_counts() == {"Sub": 2, "Add": 1, "Concat": 1, "Exp": 1}
    assert max_output_error(g, res.graph, seed=int(rng.integers(1 << 30))) == 0.0


def test_different_attributes_never_merge():
    rng = np.random.default_rng()
    g = Graph("attrs")
    x = g.add_input("x", TensorType((1, 2, 8, 8)))
    w = g.add_initializer("w", _rand(rng, 3, 2, 3, 3))
    c1 = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1]}).outputs[0]
    c2 = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1]}).outputs[0]
    c3 = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1], "dilations": [1, 1]}).outputs[0]  # default spelled out
    t1 = g.add_node("Transpose", [c1], {"perm": [0, 1, 3, 2]}).outputs[0]
    t2 = g.add_node("Transpose", [c2], {"perm": [0, 2, 3, 1]}).outputs[0]
    sm1 = g.add_node("Softmax", [t1], {"axis": 1}).outputs[0]
    sm2 = g.add_node("Softmax", [t1], {"axis": 2}).outputs[0]
    g.outputs = [t2, c3, sm1, sm2]
    res = CSE().run(g)
    assert res.stats["merged_nodes"] == 1  # only c2 into c1
    assert res.graph.op_counts() == {"Conv": 2, "Softmax": 2, "Transpose": 2}
    assert max_output_error(g, res.graph) == 0.0


def test_identical_constants_are_merged_first():
    g = Graph("consts")
    x = g.add_input("x", TensorType((3,)))
    a = g.add_initializer("half_a", np.full(3, 0.5, np.float32))
    b = g.add_initializer("half_b", np.full(3, 0.5, np.float32))
    m1 = g.add_node("Mul", [x, a]).outputs[0]
    m2 = g.add_node("Mul", [b, x]).outputs[0]
    g.outputs = [g.add_node("Sub", [m1, m2]).outputs[0]]
    res = CSE().run(g)
    assert res.stats == {"merged_nodes": 1, "merged_constants": 1}
    assert len(res.graph.initializers) == 1


def test_duplicate_graph_outputs_keep_their_names():
    g = Graph("outs")
    x = g.add_input("x", TensorType((2, 2)))
    g.add_node("Relu", [x], outputs=["r1"])
    g.add_node("Relu", [x], outputs=["r2"])
    g.add_node("Neg", ["r1"], outputs=["n"])
    g.outputs = ["r2", "n"]  # r2 is an output, r1 is not
    res = CSE().run(g)
    assert res.graph.outputs == ["r2", "n"] and len(res.graph) == 2
    assert res.graph.nodes[1].inputs == ["r2"]
    assert max_output_error(g, res.graph) == 0.0
    g.outputs = ["r1", "r2"]  # both are outputs: nothing may merge
    assert not CSE().run(g).changed
