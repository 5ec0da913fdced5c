"""Native opsets: import keeps the model's opset, export writes it (or another one asked for) in each op's form
there, and onnx's checker and onnxruntime accept the result."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from infopt.ir import Graph, GraphError, TensorType
from infopt.ir.interpreter import run_graph
from infopt.ir.onnx_io import from_onnx, max_opset, to_onnx
from infopt.ir.text import parse_text, to_text
from infopt.ir.verify import graph_diff

RNG = np.random.default_rng(3)


def ort_run(m, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def model(nodes, inputs, outputs, opset, inits=()):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def ops_of(m):
    return [n.op_type for n in m.graph.node]


def conv_model(opset: int):
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["y"], name="flat")]
    return model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4])], opset, [w])


@pytest.mark.parametrize("opset", range(13, max_opset() + 1))
def test_every_opset_imports_natively_and_round_trips_at_its_own_opset(opset):
    m = conv_model(opset)
    g = from_onnx(m)
    assert g.opset == opset
    out = to_onnx(g)
    assert [(o.domain, o.version) for o in out.opset_import] == [("", opset)]
    onnx.checker.check_model(out, full_check=True)
    assert not graph_diff(from_onnx(out), g)


def test_reduce_mean_from_opset_18_exports_back_to_17():
    """The bug the issue found: ReduceMean-18 keeps noop_with_empty_axes, which opset 17 forbids."""
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    m = model([helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm", keepdims=1, noop_with_empty_axes=0)],
              [vi("x", [2, 5])], [vi("y", [2, 1])], 18, [axes])
    g = from_onnx(m)
    m17 = to_onnx(g, opset=17)
    node = m17.graph.node[0]
    assert m17.opset_import[0].version == 17 and list(node.input) == ["x"]
    assert {a.name: helper.get_attribute_value(a) for a in node.attribute} == {"keepdims": 1, "axes": [1]}
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_allclose(ort_run(m17, {"x": x})[0], x.mean(1, keepdims=True), rtol=1e-6)
    back = to_onnx(from_onnx(m17), opset=18)  # and up again: axes becomes an input
    assert ops_of(back) == ["Constant", "ReduceMean"]
    np.testing.assert_allclose(ort_run(back, {"x": x})[0], x.mean(1, keepdims=True), rtol=1e-6)


def test_reduce_with_noop_and_no_axes_becomes_identity_before_18():
    m = model([helper.make_node("ReduceMax", ["x"], ["y"], name="rm", noop_with_empty_axes=1)],
              [vi("x", [2, 5])], [vi("y", [2, 5])], 18)
    m17 = to_onnx(from_onnx(m), opset=17)
    assert ops_of(m17) == ["Identity"]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_exports_as_its_formula_before_opset_20(approximate):
    m = model([helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate=approximate)],
              [vi("x", [3, 7])], [vi("y", [3, 7])], 20)
    g = from_onnx(m)
    x = (RNG.standard_normal((3, 7)) * 3).astype(np.float32)
    ref = run_graph(g, {"x": x})["y"]
    assert ops_of(to_onnx(g)) == ["Gelu"]
    m17 = to_onnx(g, opset=17)
    assert "Gelu" not in ops_of(m17) and "Tanh" in ops_of(m17) if approximate == "tanh" else "Erf" in ops_of(m17)
    np.testing.assert_allclose(ort_run(m17, {"x": x})[0], ref, rtol=1e-5, atol=1e-6)  # f32 formula vs exact
    np.testing.assert_allclose(run_graph(from_onnx(m17), {"x": x})["y"], ref, rtol=1e-5, atol=1e-6)


def test_hardswish_before_14_and_castlike_before_15_and_shape_slices_before_15():
    m = model([helper.make_node("HardSwish", ["x"], ["h"], name="hs"),
               helper.make_node("CastLike", ["h", "t"], ["c"], name="cl"),
               helper.make_node("Shape", ["c"], ["y"], name="sh", start=1)],
              [vi("x", [2, 3, 4]), vi("t", [1], TensorProto.DOUBLE)], [vi("y", [2], TensorProto.INT64)], 15)
    g = from_onnx(m)
    m13 = to_onnx(g, opset=13)
    assert ops_of(m13) == ["HardSigmoid", "Mul", "Cast", "Shape", "Constant", "Constant", "Slice"]
    feeds = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32), "t": np.zeros(1)}
    np.testing.assert_array_equal(ort_run(m13, feeds)[0], [3, 4])
    np.testing.assert_array_equal(run_graph(from_onnx(m13), feeds)["y"], [3, 4])


def test_split_num_outputs_and_the_opset_13_form():
    uneven = model([helper.make_node("Split", ["x"], ["a", "b", "c"], name="sp", axis=1, num_outputs=3)],
                   [vi("x", [2, 7])], [vi("a", [2, 3]), vi("b", [2, 3]), vi("c", [2, 1])], 18)
    g = from_onnx(uneven)
    m17 = to_onnx(g, opset=17)
    assert ops_of(m17) == ["Constant", "Split"]
    x = RNG.standard_normal((2, 7)).astype(np.float32)
    for got, want in zip(ort_run(m17, {"x": x}), np.split(x, [3, 6], axis=1)):
        np.testing.assert_array_equal(got, want)
    even13 = model([helper.make_node("Split", ["x"], ["a", "b"], name="sp", axis=1)],
                   [vi("x", [2, 6])], [vi("a", [2, 3]), vi("b", [2, 3])], 13)
    g13 = from_onnx(even13)
    assert g13.nodes[0].attrs == {"axis": 1, "num_outputs": 2}  # the IR's form of "one part per output"
    out = to_onnx(g13)
    assert list(out.graph.node[0].input) == ["x"] and [a.name for a in out.graph.node[0].attribute] == ["axis"]
    assert ops_of(to_onnx(g13, opset=18)) == ["Split"]


def test_attributes_and_ops_a_target_opset_lacks_are_named():
    m = model([helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[2, 2], dilations=[2, 2])],
              [vi("x", [1, 1, 6, 6])], [vi("y", [1, 1, 4, 4])], 19)
    with pytest.raises(GraphError, match=r"node ap: AveragePool attribute dilations=\[2, 2\] cannot be written at "
                                         r"opset 18 \(it exists from opset 19"):
        to_onnx(from_onnx(m), opset=18)
    ln = model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")],
               [vi("x", [2, 4]), vi("s", [4])], [vi("y", [2, 4])], 17)
    with pytest.raises(GraphError, match=r"LayerNormalization does not exist at opset 13 \(it exists from opset 17\)"):
        to_onnx(from_onnx(ln), opset=13)
    with pytest.raises(ValueError, match="opset 12 is outside"):
        to_onnx(from_onnx(ln), opset=12)


def test_opset_survives_passes_and_the_text_form():
    from infopt.passes import default_pipeline

    g = from_onnx(conv_model(18))
    opt = default_pipeline().run(g).graph
    assert opt.opset == 18 and to_onnx(opt).opset_import[0].version == 18
    text = to_text(g, max_inline=10**6)
    assert ") opset 18 {" in text.splitlines()[0]
    back = parse_text(text)
    assert back.opset == 18 and not graph_diff(back, g)
    built = Graph("built")
    built.outputs = [built.add_node("Relu", [built.add_input("x", TensorType((2,)))]).outputs[0]]
    assert built.opset == 17 and "opset" not in to_text(built)
