"""Import errors name the node (or value) and say what to do; shapes onnx cannot infer are inferred by ours."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from infopt.ir import UnsupportedOpError
from infopt.ir.interpreter import run_graph
from infopt.ir.onnx_io import OnnxImportError, from_onnx, to_onnx


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def chain():
    """x -> Relu (r1) -> Neg (n1) -> Relu (r2) -> y"""
    return model([helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Neg", ["a"], ["b"], name="n1"),
                  helper.make_node("Relu", ["b"], ["y"], name="r2")], [vi("x", [2, 3])], [vi("y", [2, 3])])


def test_cycle_names_the_nodes_in_it():
    m = chain()
    m.graph.node[0].input[0] = "b"  # r1 reads n1's output: r1 -> n1 -> r1
    with pytest.raises(OnnxImportError) as e:
        from_onnx(m)
    msg = str(e.value)
    assert "cycle" in msg and "r1 (Relu)" in msg and "n1 (Neg)" in msg and "acyclic" in msg


def test_nodes_out_of_order_are_sorted():
    m = chain()
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend([nodes[2], nodes[0], nodes[1]])
    g = from_onnx(m)
    assert [n.name for n in g.nodes] == ["r1", "n1", "r2"]


def test_undefined_value_names_the_node_and_the_value():
    m = chain()
    m.graph.node[1].input[0] = "ghost"
    with pytest.raises(OnnxImportError, match=r"node n1 \(Neg\) reads %ghost, which no node, graph input or "
                                              r"initializer defines"):
        from_onnx(m)


def test_value_defined_twice_names_both_nodes():
    m = chain()
    m.graph.node[1].output[0] = "a"
    with pytest.raises(OnnxImportError, match=r"%a is defined twice, by node r1 \(Relu\) and by node n1 \(Neg\)"):
        from_onnx(m)


@pytest.mark.parametrize("op,a,b,words", [
    ("Add", [2, 3], [4], ["(2, 3) and (4,)", "broadcast"]),
    ("MatMul", [2, 3], [4, 5], ["shape (2, 3)", "shape (4, 5)", "K=3", "K=4"]),
])
def test_mismatched_shapes_give_both_shapes_and_the_node(op, a, b, words):
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="bad_node")], [vi("a", a), vi("b", b)], [vi("y", ["n", "m"])])
    with pytest.raises(OnnxImportError) as e:
        from_onnx(m)
    msg = str(e.value)
    assert "bad_node" in msg and all(w in msg for w in words), msg
    assert "Check the model" in msg


def test_empty_file_and_empty_bytes(tmp_path):
    p = tmp_path / "empty.onnx"
    p.write_bytes(b"")
    with pytest.raises(OnnxImportError, match=r"empty.onnx is empty \(0 bytes\).*export the model again"):
        from_onnx(p)
    with pytest.raises(OnnxImportError, match="is empty"):
        from_onnx(b"")


def test_truncated_file_says_so(tmp_path):
    data = chain().SerializeToString()
    for cut in (len(data) // 2, len(data) - 3, 6):
        p = tmp_path / f"cut{cut}.onnx"
        p.write_bytes(data[:cut])
        with pytest.raises(OnnxImportError, match=r"truncated") as e:
            from_onnx(p)
        assert f"cut{cut}.onnx" in str(e.value)


def test_unknown_op_names_the_op_the_node_and_the_opset():
    m = model([helper.make_node("Softplus", ["x"], ["y"], name="sp_3")], [vi("x", [2])], [vi("y", [2])], opset=18)
    with pytest.raises(UnsupportedOpError) as e:
        from_onnx(m)
    msg = str(e.value)
    assert "'Softplus'" in msg and "sp_3" in msg and "opset 18" in msg and "Re-export" in msg


@pytest.mark.parametrize("where", ["input", "initializer", "cast"])
def test_unsupported_dtype_names_the_value_and_what_to_do(where):
    if where == "input":
        m = model([helper.make_node("Identity", ["x"], ["y"], name="id")], [vi("x", [2], TensorProto.STRING)],
                  [vi("y", [2], TensorProto.STRING)])
        words = ["graph input 'x'", "STRING"]
    elif where == "initializer":
        w = helper.make_tensor("w", TensorProto.COMPLEX64, [2], [1 + 2j, 3 + 4j])
        m = model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", [2], TensorProto.COMPLEX64)],
                  [w])
        words = ["initializer 'w'", "COMPLEX64"]
    else:
        m = model([helper.make_node("Cast", ["x"], ["y"], name="to_fp8", to=TensorProto.FLOAT8E4M3FN)],
                  [vi("x", [2])], [vi("y", [2], TensorProto.FLOAT8E4M3FN)], opset=19)
        words = ["to_fp8", "FLOAT8E4M3FN"]
    with pytest.raises(OnnxImportError) as e:
        from_onnx(m)
    msg = str(e.value)
    assert all(w in msg for w in words) and "not supported by the infopt IR" in msg and "Cast the value" in msg, msg


@pytest.mark.parametrize("opset", [11, 40])
def test_opset_outside_the_range_says_which_opsets_work(opset):
    m = chain()
    m.opset_import[0].version = opset
    with pytest.raises(OnnxImportError, match=rf"opset {opset} is outside .*13\.\.{onnx.defs.onnx_opset_version()}"
                                              r".*Re-export"):
        from_onnx(m)


def test_model_without_graph_is_called_truncated():
    m = onnx.ModelProto()
    m.ir_version = 8
    with pytest.raises(OnnxImportError, match="has no graph, opset_import.*empty or truncated"):
        from_onnx(m.SerializeToString())


def test_static_slice_onnx_gives_up_on_is_inferred_by_ours():
    """Shape -> Gather -> Div -> Unsqueeze as Slice's end (ShuffleNetV2's channel split): onnx's data propagation
    stops at Div, so its inference leaves the Slice output unshaped; ours folds the chain and types it."""
    one = lambda v, n: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
             helper.make_node("Div", ["c", "two"], ["h"]), helper.make_node("Unsqueeze", ["h", "zero"], ["hv"]),
             helper.make_node("Slice", ["x", "zero", "hv", "onev"], ["y"], name="half"),
             helper.make_node("Relu", ["y"], ["z"])]
    m = model(nodes, [vi("x", [1, 8, 4, 4])], [vi("z", ["a", "b", "c", "d"])],
              [one(1, "one"), one(2, "two"), one([0], "zero"), one([1], "onev")])
    inferred = onnx.shape_inference.infer_shapes(m, data_prop=True)
    y = next(v for v in inferred.graph.value_info if v.name == "y")
    assert not all(d.HasField("dim_value") for d in y.type.tensor_type.shape.dim), "onnx infers it now: test moot"
    g = from_onnx(m)
    assert g.types["y"].shape == (1, 4, 4, 4) and g.types["z"].shape == (1, 4, 4, 4)
    x = np.random.default_rng(0).standard_normal((1, 8, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_graph(g, {"x": x})["z"], np.maximum(x[:, :4], 0))
    assert from_onnx(to_onnx(g)).types["z"].shape == (1, 4, 4, 4)


def test_a_model_that_declares_a_wrong_shape_is_caught():
    m = chain()
    m.graph.value_info.append(vi("a", [3, 2]))
    with pytest.raises(OnnxImportError, match=r"infopt infers f32\[2,3\] for %a but the model .* says f32\[3,2\]"):
        from_onnx(m)
