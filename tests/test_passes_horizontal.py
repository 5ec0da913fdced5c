"""Tests for infopt.passes.horizontal: sibling MatMuls/Convs merge into one wide op + Split, and nothing else does."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from infopt.ir import Graph, TensorType
from infopt.ir.onnx_io import from_onnx, to_onnx
from infopt.models import transformer_block_onnx
from infopt.passes import ConvFusion, HorizontalFusion, PassManager
from infopt.passes.equivalence import max_output_error, random_feeds


def test_qkv_projections_become_one_matmul():
    g = from_onnx(transformer_block_onnx())
    res = PassManager([HorizontalFusion()]).run(g)
    assert res.records[0].stats == {"groups": 1, "nodes_merged": 3, "nodes_saved": 1}
    ops = res.graph.op_counts()
    assert ops["MatMul"] == g.op_counts()["MatMul"] - 2 and ops["Split"] == 1
    wide = next(n for n in res.graph.nodes if n.op == "MatMul" and n.inputs[1] in res.graph.initializers
                and res.graph.initializers[n.inputs[1]].shape == (64, 192))
    assert res.graph.types[wide.outputs[0]].shape == (1, 16, 192)
    assert max_output_error(g, res.graph) <= 1e-5
    model = to_onnx(res.graph)  # the merged graph is valid ONNX and onnxruntime agrees with the original
    feeds = random_feeds(g, 0)
    want = ort.InferenceSession(to_onnx(g).SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


def _branches(rng, fused: bool = False) -> Graph:
    """Four convolutions of one input: three 3x3 with bias (mergeable), one 1x1 (a different window)."""
    g = Graph("branches")
    x = g.add_input("x", TensorType((1, 8, 10, 10), layout="NCHW"))
    outs = []
    for k, (o, ksz) in enumerate([(4, 3), (6, 3), (2, 3), (5, 1)]):
        w = g.add_initializer(f"w{k}", rng.standard_normal((o, 8, ksz, ksz)).astype(np.float32))
        b = g.add_initializer(f"b{k}", rng.standard_normal(o).astype(np.float32))
        y = g.add_node("Conv", [x, w, b], {"pads": [ksz // 2] * 4}).outputs[0]
        outs.append(g.add_node("Relu", [y]).outputs[0] if fused else y)
    g.outputs = outs
    return ConvFusion()(g) if fused else g


@pytest.mark.parametrize("fused", [False, True])
def test_conv_branches_with_the_same_window_merge(fused):
    rng = np.random.default_rng(0)
    g = _branches(rng, fused)
    res = HorizontalFusion().run(g)
    op = "FusedConv" if fused else "Conv"
    assert res.stats == {"groups": 1, "nodes_merged": 3, "nodes_saved": 1}  # 3 convs -> 1 conv + 1 Split
    assert res.graph.op_counts() == {op: 2, "Split": 1}
    wide = next(n for n in res.graph.nodes if n.op == op and res.graph.types[n.outputs[0]].shape[1] == 12)
    assert res.graph.initializers[wide.inputs[2]].shape == (12,)  # the biases are stacked too
    assert res.graph.outputs == g.outputs  # readers and graph outputs keep their names
    assert max_output_error(g, res.graph) <= 1e-5


def test_siblings_that_differ_do_not_merge():
    rng = np.random.default_rng(1)
    g = Graph("differ")
    x = g.add_input("x", TensorType((1, 4, 8, 8)))
    v = g.add_input("v", TensorType((4, 4, 3, 3)))  # a weight that is not a constant
    w = lambda: g.add_initializer(g.fresh_name("w"), rng.standard_normal((4, 4, 3, 3)).astype(np.float32))  # noqa: E731
    outs = [
        g.add_node("Conv", [x, w()], {"strides": [2, 2]}).outputs[0],
        g.add_node("Conv", [x, w()], {"strides": [1, 1]}).outputs[0],  # other strides
        g.add_node("Conv", [x, v]).outputs[0],  # weights only known at run time
        g.add_node("Conv", [x, g.add_initializer("wg", rng.standard_normal((4, 2, 3, 3)).astype(np.float32))],
                   {"group": 2}).outputs[0],  # grouped
    ]
    y = g.add_input("y", TensorType((3, 5)))
    outs.append(g.add_node("MatMul", [y, g.add_initializer("m0", np.ones((5, 2), np.float32))]).outputs[0])
    z = g.add_input("z", TensorType((3, 5)))
    outs.append(g.add_node("MatMul", [z, g.add_initializer("m2", np.ones((5, 2), np.float32))]).outputs[0])  # other input
    g.outputs = outs
    res = HorizontalFusion().run(g)
    assert not res.changed and "share an input" in res.reason


def test_residual_fused_convs_do_not_merge():
    """A FusedConv with a Z (residual) input adds a different tensor per sibling: not a horizontal merge."""
    rng = np.random.default_rng(2)
    g = Graph("z")
    x = g.add_input("x", TensorType((1, 4, 6, 6)))
    zs = [g.add_input(f"z{k}", TensorType((1, 4, 6, 6))) for k in range(2)]
    g.outputs = [g.add_node("FusedConv", [x, g.add_initializer(f"w{k}", rng.standard_normal((4, 4, 1, 1)).astype(np.float32)),
                                          "", zs[k]], {"activation": "Relu"}).outputs[0] for k in range(2)]
    assert not HorizontalFusion().run(g).changed


def test_min_group_is_checked():
    with pytest.raises(ValueError, match="min_group must be at least 2"):
        HorizontalFusion(min_group=1)
    g = from_onnx(transformer_block_onnx())
    assert not HorizontalFusion(min_group=4).run(g).changed  # Q, K, V are three


def test_qkv_projections_merge_into_one_wide_matmul():
    from infopt.models import qkv_projections

    g = qkv_projections(tokens=4, hidden=8, seed=3)
    assert g.outputs == ["q", "k", "v"] and g.op_counts() == {"MatMul": 3}
    merged = HorizontalFusion()(g)
    assert merged.op_counts() == {"MatMul": 1, "Split": 1} and merged.outputs == ["q", "k", "v"]
    assert max_output_error(g, merged) <= 1e-6
