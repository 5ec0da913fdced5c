"""Tests for infopt.passes.nchwc: blocked layouts match onnxruntime's, and NCHWc graphs keep their meaning
in the interpreter and in onnxruntime (ORT_DISABLE_ALL runs our com.microsoft.nchwc nodes)."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import ConvFusion, PassManager, ToNCHWc
from infopt.passes.equivalence import max_output_error, random_feeds
from infopt.passes.export import export_optimized
from infopt.passes.nchwc import block_nchw, ort_block_size, reorder_weights, unblock, unreorder_weights
from infopt.runtime.onnxruntime_session import ort_kernels, ort_run
from infopt.passes.rewrite import max_relative_error


@pytest.mark.parametrize("nchw_input, cin", [(True, 3), (False, 32)])
def test_weight_reorder_matches_onnxruntime(nchw_input, cin, tmp_path):
    """Let onnxruntime's own NCHWc rewrite reorder a weight, and compare with ours."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from infopt.runtime.onnxruntime_session import ort_session

    b = ort_block_size()
    w = np.random.default_rng().standard_normal((2 * b, cin, 3, 3)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * b, 6, 6])],
                          initializer=[numpy_helper.from_array(w, "w")])
    path = str(tmp_path / "opt.onnx")
    ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "all", optimized_path=path)
    (theirs,) = [numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer if i.dims[0] == 2 * b]
    np.testing.assert_array_equal(reorder_weights(w, b, nchw_input), theirs)
    np.testing.assert_array_equal(unreorder_weights(theirs, b, nchw_input), w)


def test_block_and_unblock_round_trip_with_padding():
    x = np.random.default_rng().standard_normal((2, 5, 3, 4)).astype(np.float32)
    blocked = block_nchw(x, 4)
    assert blocked.shape == (2, 8, 3, 4)
    assert np.all(blocked.reshape(2, 2, 3, 4, 4)[:, 1, :, :, 1:] == 0)  # channels 5..7 padded with zeros
    np.testing.assert_array_equal(unblock(blocked, 4, 5), x)


def _net(rng, b):
    g = Graph("net")
    x = g.add_input("x", TensorType((1, 3, 12, 12)))
    w0 = g.add_initializer("w0", (0.3 * rng.standard_normal((b, 3, 3, 3))).astype(np.float32))
    h = g.add_node("Relu", [g.add_node("Conv", [x, w0], {"pads": [1, 1, 1, 1]}).outputs[0]]).outputs[0]
    h = g.add_node("MaxPool", [h], {"kernel_shape": [2, 2], "strides": [2, 2]}).outputs[0]
    w1 = g.add_initializer("w1", (0.2 * rng.standard_normal((b, b, 3, 3))).astype(np.float32))
    b1 = g.add_initializer("b1", rng.standard_normal(b).astype(np.float32))
    c = g.add_node("Conv", [h, w1, b1], {"pads": [1, 1, 1, 1]}).outputs[0]
    h = g.add_node("Relu", [g.add_node("Add", [c, h]).outputs[0]]).outputs[0]
    w2 = g.add_initializer("w2", (0.2 * rng.standard_normal((b, b, 1, 1))).astype(np.float32))
    side = g.add_node("Conv", [h, w2]).outputs[0]  # no activation, and a reader that stays NCHW
    g.outputs = [g.add_node("GlobalAveragePool", [side]).outputs[0], g.add_node("Sigmoid", [side]).outputs[0]]
    return ConvFusion()(g)


def test_nchwc_graph_keeps_meaning_and_runs_as_ort_nchwc_kernels():
    rng = np.random.default_rng()
    b = ort_block_size()
    g = _net(rng, b)
    res = PassManager([ToNCHWc()]).run(g)
    assert res.records[0].stats["convs"] == 3
    ops = res.graph.op_counts()
    assert ops["NchwcConv"] == 3 and ops["NchwcMaxPool"] == 1 and ops["NchwcGlobalAveragePool"] == 1
    assert ops["ReorderOutput"] == 2 and "ReorderInput" not in ops  # the image is read as NCHW directly
    for n in res.graph.nodes:  # the types say which values are blocked
        want = "NCHW" if n.op == "ReorderOutput" else "NCHWc" if n.op.startswith("Nchwc") else None
        if want:
            assert res.graph.types[n.outputs[0]].layout == want, (n, res.graph.types[n.outputs[0]])
    feeds = random_feeds(g, rng)
    assert max_output_error(g, res.graph, feeds) <= 1e-5
    model = export_optimized(res.graph, "ort")
    assert {o.domain for o in model.opset_import} >= {"com.microsoft.nchwc"}
    ref = export_optimized(g, "onnx")
    for got, want in zip(ort_run(model, feeds), ort_run(ref, feeds)):
        assert max_relative_error(got, want) <= 1e-5
    assert ort_kernels(model, feeds) == {"Conv": 3, "ReorderOutput": 2, "GlobalAveragePool": 1, "MaxPool": 1,
                                         "Sigmoid": 1}


def test_convs_that_do_not_fit_the_blocks_stay():
    b = ort_block_size()
    g = Graph("odd")
    x = g.add_input("x", TensorType((1, b + 1, 5, 5)))
    w = g.add_initializer("w", np.ones((b, b + 1, 1, 1), np.float32))  # input channels neither < b nor a multiple
    g.outputs = [g.add_node("Conv", [x, w]).outputs[0]]
    res = ToNCHWc().run(g)
    assert not res.changed and "block" in res.reason


def test_nchwc_tags_survive_text_form():
    """Blocked values carry the NCHWc layout tag, and the text form writes and reads it back."""
    from infopt.ir.text import parse_text, to_text

    b = ort_block_size()
    g = Graph("t")
    x = g.add_input("x", TensorType((1, b, 6, 6), layout="NCHW"))
    w = g.add_initializer("w", np.ones((b, b, 3, 3), np.float32))
    g.outputs = [g.add_node("Relu", [g.add_node("Conv", [x, w]).outputs[0]]).outputs[0]]
    r = ToNCHWc().run(ConvFusion()(g)).graph
    assert sorted(t.layout for k, t in r.types.items() if k not in r.initializers) == ["NCHW", "NCHW", "NCHWc", "NCHWc"]
    back = parse_text(to_text(r), r.initializers)
    assert {k: t.layout for k, t in back.types.items()} == {k: t.layout for k, t in r.types.items()}
