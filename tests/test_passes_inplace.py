"""Tests for infopt.passes.inplace: an output may take an input's buffer only when that input dies there."""
import numpy as np

from infopt.ir import Graph, TensorType
from infopt.passes import inplace_candidates


def test_inplace_only_where_the_input_dies_with_the_same_type():
    g = Graph("ip")
    x = g.add_input("x", TensorType((4, 4)))
    a = g.add_node("Exp", [x], outputs=["a"]).outputs[0]          # x is a graph input: never overwritten
    b = g.add_node("Relu", [a], outputs=["b"]).outputs[0]         # a dies here: b may reuse a
    c = g.add_node("Sigmoid", [b], outputs=["c"]).outputs[0]      # b is read again below: no reuse
    d = g.add_node("Add", [b, c], outputs=["d"]).outputs[0]       # b and c die here: d reuses one of them
    w = g.add_initializer("w", np.ones((4, 8), np.float32))
    e = g.add_node("MatMul", [d, w], outputs=["e"]).outputs[0]    # not elementwise
    one = g.add_initializer("one", np.ones((1, 4), np.float32))
    f = g.add_node("Add", [d, one], outputs=["f"]).outputs[0]     # d's last reader: f may take d's buffer
    g.outputs = [e, f]
    assert inplace_candidates(g) == {"b": "a", "d": "b", "f": "d"}
    # run the Add before the MatMul: d is still needed afterwards, so f must get its own buffer
    order = g.toposort()
    order[-1], order[-2] = order[-2], order[-1]
    assert inplace_candidates(g, order) == {"b": "a", "d": "b"}


def test_broadcasting_output_never_reuses_a_smaller_input():
    g = Graph("bc")
    x = g.add_input("x", TensorType((4,)))
    a = g.add_node("Neg", [x], outputs=["a"]).outputs[0]
    g.add_node("Add", [a, g.add_initializer("big", np.ones((3, 4), np.float32))], outputs=["b"])
    g.outputs = ["b"]
    assert inplace_candidates(g) == {}
