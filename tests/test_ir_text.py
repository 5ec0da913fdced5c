"""The text form: exact round trips (attributes, types, layouts, names), elided constants, parse errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from infopt.ir import Graph, GraphError, TensorType, graph_diff, parse_text, to_text
from tests.strategies import graphs


def roundtrip(g: Graph, max_inline: int = 16) -> Graph:
    h = parse_text(to_text(g, max_inline), g.initializers)
    assert graph_diff(g, h) == [], to_text(g)
    return h


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_random_graphs_round_trip(g):
    roundtrip(g)
    roundtrip(g, max_inline=0)
    h = parse_text(to_text(g, max_inline=10**9))  # everything inlined: no constants needed
    assert graph_diff(g, h) == []


def awkward_graph() -> Graph:
    """Quoted names, layouts, absent inputs, multi-output nodes, every attribute kind, all dtypes."""
    rng = np.random.default_rng(0)
    g = Graph("odd/name:1")
    x = g.add_input("input.1", TensorType((1, 3, 4, 4), layout="NCHW"))
    g.add_input("onnx::ids", TensorType((2,), "i64"))
    w = g.add_initializer("onnx::Conv_7", rng.standard_normal((2, 3, 3, 3)).astype(np.float32))
    g.add_initializer("s", np.array(0.25, np.float32))
    g.add_initializer("flags", np.array([True, False]))
    g.add_initializer("tiny", np.array([np.nan, np.inf, -0.0, 1e-30], np.float32))
    g.add_initializer("halves", np.array([0.1, 65504.0], np.float16))
    g.add_initializer("lo", np.array(-1.0, np.float32))
    c = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1], "strides": [1, 1], "dilations": [1, 1]},
                   outputs=["conv out"], name="conv #1").outputs[0]
    clip_node = g.add_node("Clip", [c, "lo", ""], outputs=["clip"])
    clip_node.name = ""
    clip = clip_node.outputs[0]
    d = g.add_node("Dropout", [clip], outputs=["d", "mask"], name="drop")
    g.add_node("Constant", [], {"value": rng.standard_normal((4, 5)).astype(np.float32)}, outputs=["big"])
    g.add_node("Constant", [], {"value": np.arange(3, dtype=np.int64)}, outputs=["small"])
    g.add_node("Constant", [], {"value_floats": [1.5, -2.0, 1e-8]}, outputs=["fl"])
    g.add_node("Gelu", [d.outputs[0]], {"approximate": "tanh"}, outputs=["gelu"])
    n = g.add_node("LayerNormalization", ["gelu", "s"], {"epsilon": 1e-05, "axis": -1}, outputs=["ln"])
    n.attrs["note"] = 'quote " and \\ backslash'
    n.attrs["mixed"] = [1, -2, 3]
    n.attrs["floats"] = [0.1, float("inf"), -3.0]
    n.attrs["empty"] = []
    n.attrs["strs"] = ["a", "b c"]
    n.attrs["neg_float"] = -0.5
    n.attrs["nested"] = {"config": {"rows": 4, "fast": True, "dtype": "f32"}, "none": None, "2x": [(1, 2), {}]}
    n.attrs["nothing"] = None
    n.attrs["odd key"] = 1
    g.outputs = ["ln", "mask", "big", "small", "fl"]
    return g


def test_awkward_graph_round_trips():
    g = awkward_graph()
    text = to_text(g)
    assert '%"conv out": f32[1,2,4,4] NCHW = Conv(%input.1, %"onnx::Conv_7")' in text
    assert "none" in text and 'loc("conv #1")' in text
    assert "dense<f32[4,5]>" in text  # 20 elements: elided
    assert "dense<i64[3] [0, 1, 2]>" in text
    with pytest.raises(GraphError, match=r"constants\['big'\]"):
        parse_text(text, g.initializers)
    h = parse_text(text, {**g.initializers, "big": g.nodes[3].attrs["value"]})
    assert graph_diff(g, h) == []
    assert isinstance(h.nodes[-1].attrs["neg_float"], float) and isinstance(h.nodes[-1].attrs["mixed"][0], int)


def test_header_and_node_line_format():
    g = Graph("net")
    g.add_input("x", TensorType((1, 64, 56, 56), layout="NCHW"))
    g.add_node("Relu", ["x"], outputs=["y"]).name = ""  # unnamed: no loc(...)
    g.outputs = ["y"]
    lines = to_text(g).splitlines()
    assert lines[0] == "graph @net(%x: f32[1,64,56,56] NCHW) -> (%y) {"
    assert lines[1] == "  %y: f32[1,64,56,56] NCHW = Relu(%x)"
    assert lines[2] == "}"


def test_elided_constant_must_be_given():
    g = Graph("g")
    g.add_input("x", TensorType((2, 20)))
    g.add_initializer("w", np.zeros((20, 3), np.float32))
    g.add_node("MatMul", ["x", "w"], outputs=["y"])
    g.outputs = ["y"]
    text = to_text(g)
    assert "%w = const f32[20,3]\n" in text
    with pytest.raises(GraphError, match=r"line 2: constant %w \(f32\[20,3\]\) is elided.*constants\['w'\]"):
        parse_text(text)
    with pytest.raises(GraphError, match=r"constants\['w'\] is f32\[3,20\]"):
        parse_text(text, {"w": np.zeros((3, 20), np.float32)})


@pytest.mark.parametrize("text,where,what", [
    ("", "line 1", "header"),
    ("graf @g() -> () {\n}", "line 1", "'graph'"),
    ("graph @g(%x f32[2]) -> (%x) {\n}", "line 1", "':'"),
    ("graph @g(%x: f33[2]) -> (%x) {\n}", "line 1", "a dtype"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x\n}", "line 2", "',' or ')'"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x) {alpha=}\n}", "line 2", "an attribute value"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %c = const f32[2] [1.0]\n}", "line 2", "2 values"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x) junk\n}", "line 2", "the end of the line"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x)", "line 3", "closing '}'"),
    ("graph @g(%x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x) ?\n}", "line 2", "column"),
])
def test_parse_errors_name_the_line_and_the_expectation(text, where, what):
    with pytest.raises(GraphError) as info:
        parse_text(text)
    msg = str(info.value)
    assert msg.startswith(where), msg
    assert what in msg, msg


def test_comments_and_blank_lines_are_ignored():
    text = "// a comment\ngraph @g(%x: f32[2]) -> (%y) {\n\n  %y: f32[2] = Relu(%x) // relu\n}\n"
    g = parse_text(text)
    assert [n.op for n in g.nodes] == ["Relu"] and g.outputs == ["y"]


def test_unprintable_attribute_is_a_clear_error():
    g = Graph("g")
    g.add_input("x", TensorType((2,)))
    n = g.add_node("Relu", ["x"], name="r")
    n.attrs["obj"] = object()
    with pytest.raises(GraphError, match="node r: attribute obj="):
        to_text(g)
