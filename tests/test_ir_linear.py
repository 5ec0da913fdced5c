"""The linear (execution-order) view: round trips, sources that point backwards, multi-output entries."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from infopt.ir import Graph, GraphError, LinearOp, TensorType, format_linear, from_linear, graph_diff, to_linear
from tests.strategies import graphs, random_graph


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_random_graphs_round_trip(g):
    lin = to_linear(g)
    assert [op.index for op in lin] == list(range(len(g.nodes)))
    for op in lin:  # every index source points to an earlier entry
        for s in op.srcs:
            i = s if isinstance(s, int) else s[0] if isinstance(s, tuple) else None
            assert i is None or i < op.index
    assert graph_diff(g, from_linear(lin)) == []
    inputs = {i: g.types[i] for i in g.inputs}
    assert graph_diff(g, from_linear(list(lin), inputs, g.outputs, g.initializers, g.name)) == []


def test_order_is_topological_even_if_stored_order_is_not():
    g = random_graph(7, 10)
    g.nodes = g.nodes[::-1]
    lin = to_linear(g)
    back = from_linear(lin)
    assert [n.name for n in back.nodes] == [n.name for n in g.toposort()]


def multi_output_graph() -> Graph:
    g = Graph("multi")
    g.add_input("x", TensorType((2, 4)))
    g.add_initializer("s", np.ones(4, np.float32))
    d = g.add_node("Dropout", ["x"], outputs=["d", "mask"], name="drop")
    ln = g.add_node("LayerNormalization", ["d", "s"], outputs=["y", "mean", "inv"], name="ln")
    g.add_node("Mul", [ln.outputs[0], ln.outputs[2]], outputs=["z"], name="mul")
    g.add_node("Clip", ["z", "", ""], outputs=["c"], name="clip")
    g.outputs = ["c", "mask", "mean"]
    return g


def test_multi_output_sources_and_absent_inputs():
    g = multi_output_graph()
    lin = to_linear(g)
    assert lin[2].srcs == (1, (1, 2))
    assert lin[3].srcs == (2, None, None)
    assert lin[0].srcs == ("x",) and lin[1].srcs == (0, "s")
    assert lin[1].types == (TensorType((2, 4)), TensorType((2, 1)), TensorType((2, 1)))
    assert graph_diff(g, from_linear(lin)) == []
    text = format_linear(lin)
    assert len(text.splitlines()) == 4 and "1.2" in text and "%x" in text
    assert str(lin[2]).startswith("2: Mul(1, 1.2)")


def test_plain_list_without_names_gets_fresh_names_and_sink_outputs():
    ops = [LinearOp(0, "Relu", ("x",)), LinearOp(1, "Neg", (0,)), LinearOp(2, "Add", (0, 1)), LinearOp(3, "Neg", (0,))]
    g = from_linear(ops, {"x": TensorType((3,))})
    assert [n.outputs for n in g.nodes] == [["v0"], ["v1"], ["v2"], ["v3"]]
    assert g.outputs == ["v2", "v3"]
    assert g.nodes[2].inputs == ["v0", "v1"]


@pytest.mark.parametrize("ops,pattern", [
    ([LinearOp(0, "Relu", (0,))], "reads entry 0, which does not come before it"),
    ([LinearOp(0, "Relu", ("x",)), LinearOp(1, "Neg", (5,))], "reads entry 5"),
    ([LinearOp(0, "Relu", ("x",)), LinearOp(1, "Neg", ((0, 3),))], "output 3 of entry 0, which has 1"),
    ([LinearOp(0, "Relu", ("nope",))], "%nope, which is not a graph input or constant"),
    ([LinearOp(1, "Relu", ("x",))], "says index 1"),
])
def test_bad_lists_are_rejected_with_the_entry(ops, pattern):
    with pytest.raises(GraphError, match=pattern):
        from_linear(ops, {"x": TensorType((3,))}, [0])


def test_bad_outputs_and_dangling_graph():
    with pytest.raises(GraphError, match="graph output %zz"):
        from_linear([LinearOp(0, "Relu", ("x",))], {"x": TensorType((3,))}, ["zz"])
    g = Graph("g")
    g.add_input("x", TensorType((3,)))
    g.add_node("Add", ["x", "ghost"], infer=False, name="bad")
    with pytest.raises(GraphError, match="node bad reads %ghost"):
        to_linear(g)


def test_linear_round_trip_keeps_the_opset():
    from infopt.ir import Graph, TensorType
    from infopt.ir.linear import from_linear, to_linear
    from infopt.ir.verify import graph_diff

    g = Graph("op18", opset=18)
    g.outputs = [g.add_node("Relu", [g.add_input("x", TensorType((2,)))]).outputs[0]]
    prog = to_linear(g)
    assert prog.opset == 18 and from_linear(prog).opset == 18 and not graph_diff(from_linear(prog), g)
