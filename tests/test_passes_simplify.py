"""Tests for infopt.passes.simplify: identities and strength reductions, and the rewrites it must refuse."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import AlgebraicSimplification, DeadCodeElimination, PassManager
from infopt.passes.equivalence import max_output_error

SIMPLIFY = PassManager([AlgebraicSimplification(), DeadCodeElimination()], fixpoint=True)


def _unary_graph(build, shape=(2, 3, 4)):
    g = Graph("s")
    x = g.add_input("x", TensorType(shape))
    g.outputs = [g.add_node("Relu", [build(g, x)]).outputs[0]]  # a consumer so the rewrite is internal
    return g


def _const(g, value, dtype=np.float32):
    return g.add_initializer(g.fresh_name("c"), np.asarray(value, dtype))


@pytest.mark.parametrize("build, expect", [
    (lambda g, x: g.add_node("Mul", [x, _const(g, 1.0)]).outputs[0], []),
    (lambda g, x: g.add_node("Mul", [_const(g, np.ones(4)), x]).outputs[0], []),
    (lambda g, x: g.add_node("Add", [x, _const(g, 0.0)]).outputs[0], []),
    (lambda g, x: g.add_node("Sub", [x, _const(g, 0.0)]).outputs[0], []),
    (lambda g, x: g.add_node("Div", [x, _const(g, 1.0)]).outputs[0], []),
    (lambda g, x: g.add_node("Div", [x, _const(g, 3.0)]).outputs[0], ["Mul"]),
    (lambda g, x: g.add_node("Pow", [x, _const(g, 2.0)]).outputs[0], ["Mul"]),
    (lambda g, x: g.add_node("Pow", [g.add_node("Relu", [x]).outputs[0], _const(g, 0.5)]).outputs[0], ["Relu", "Sqrt"]),
    (lambda g, x: g.add_node("Pow", [x, _const(g, 1.0)]).outputs[0], []),
    (lambda g, x: g.add_node("Identity", [x]).outputs[0], []),
    (lambda g, x: g.add_node("Dropout", [x]).outputs[0], []),
    (lambda g, x: g.add_node("Transpose", [g.add_node("Transpose", [x], {"perm": [1, 2, 0]}).outputs[0]],
                             {"perm": [2, 0, 1]}).outputs[0], []),
    (lambda g, x: g.add_node("Transpose", [g.add_node("Transpose", [x], {"perm": [1, 0, 2]}).outputs[0]],
                             {"perm": [0, 2, 1]}).outputs[0], ["Transpose"]),
    (lambda g, x: g.add_node("Reshape", [g.add_node("Reshape", [x, _const(g, [6, 4], np.int64)]).outputs[0],
                                         _const(g, [4, -1], np.int64)]).outputs[0], ["Reshape"]),
    (lambda g, x: g.add_node("Reshape", [x, _const(g, [0, 3, -1], np.int64)]).outputs[0], []),
])
def test_rewrites_preserve_meaning(build, expect):
    g = _unary_graph(build)
    res = SIMPLIFY.run(g)
    assert [n.op for n in res.graph.nodes] == expect + ["Relu"]
    assert max_output_error(g, res.graph, seed=int(np.random.default_rng().integers(1 << 30))) <= 1e-6


def test_refuses_rewrites_that_would_change_the_type():
    g = Graph("bcast")
    x = g.add_input("x", TensorType((4,)))
    y = g.add_node("Mul", [x, _const(g, np.ones((3, 4)))]).outputs[0]  # broadcasts x up to (3, 4)
    z = g.add_node("Add", [y, _const(g, np.zeros((2, 1, 1)))]).outputs[0]  # and again to (2, 3, 4)
    g.outputs = [g.add_node("Neg", [z]).outputs[0]]
    res = AlgebraicSimplification().run(g)
    assert not res.changed and [n.op for n in res.graph.nodes] == ["Mul", "Add", "Neg"]


def test_dropout_with_a_used_mask_stays():
    g = Graph("mask")
    x = g.add_input("x", TensorType((5,)))
    g.add_node("Dropout", [x], outputs=["y", "mask"])
    g.outputs = ["y", "mask"]
    assert not AlgebraicSimplification().run(g).changed


def test_output_names_survive_when_the_last_node_is_removed():
    g = Graph("out")
    x = g.add_input("x", TensorType((5,)))
    r = g.add_node("Relu", [x], outputs=["r"]).outputs[0]
    g.add_node("Identity", [r], outputs=["out"])
    g.outputs = ["out"]
    res = AlgebraicSimplification().run(g)
    assert res.graph.outputs == ["out"] and [n.op for n in res.graph.nodes] == ["Relu"]
    assert res.graph.nodes[0].outputs == ["out"]
    assert max_output_error(g, res.graph) == 0.0
    # an Identity straight from a graph input to an output cannot be removed without renaming the interface
    g2 = Graph("pass_through")
    g2.add_input("x", TensorType((5,)))
    g2.add_node("Identity", ["x"], outputs=["out"])
    g2.outputs = ["out"]
    assert not AlgebraicSimplification().run(g2).changed
