"""Tests for infopt.passes.fusion: Conv(+BN)(+Add)+ReLU into FusedConv, elementwise chains, and legality."""
import json

import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import ConvFusion, ElementwiseFusion
from infopt.passes.equivalence import max_output_error


def _residual_block(rng, with_bn=True):
    g = Graph("block")
    x = g.add_input("x", TensorType((1, 4, 6, 6)))
    h = x
    for k in range(2):
        w = g.add_initializer(f"w{k}", (0.3 * rng.standard_normal((4, 4, 3, 3))).astype(np.float32))
        h = g.add_node("Conv", [h, w], {"pads": [1, 1, 1, 1]}).outputs[0]
        if with_bn:
            bn = [g.add_initializer(f"{n}{k}", v.astype(np.float32)) for n, v in zip("sbmv", (
                rng.uniform(0.5, 2, 4), rng.standard_normal(4), rng.standard_normal(4), rng.uniform(0.1, 2, 4)))]
            h = g.add_node("BatchNormalization", [h, *bn]).outputs[0]
        if k == 0:
            h = g.add_node("Relu", [h]).outputs[0]
    s = g.add_node("Add", [h, x]).outputs[0]
    g.outputs = [g.add_node("Relu", [s]).outputs[0]]
    return g


def test_conv_bn_relu_and_residual_become_two_fused_convs():
    rng = np.random.default_rng()
    g = _residual_block(rng)
    res = ConvFusion().run(g)
    assert res.stats == {"bn_folded": 2, "add_fused": 1, "act_fused": 2}
    assert [n.op for n in res.graph.nodes] == ["FusedConv", "FusedConv"]
    second = res.graph.nodes[1]
    assert second.attrs["activation"] == "Relu" and second.inputs[3] == "x"
    assert max_output_error(g, res.graph) <= 1e-5


def test_residual_add_not_fused_without_fuse_add():
    g = _residual_block(np.random.default_rng(), with_bn=False)
    res = ConvFusion(fuse_add=False).run(g)
    assert [n.op for n in res.graph.nodes] == ["FusedConv", "Conv", "Add", "Relu"]
    assert max_output_error(g, res.graph) <= 1e-5


def test_conv_whose_output_is_also_read_elsewhere_is_not_fused():
    rng = np.random.default_rng()
    g = Graph("shared")
    x = g.add_input("x", TensorType((1, 2, 5, 5)))
    w = g.add_initializer("w", rng.standard_normal((3, 2, 1, 1)).astype(np.float32))
    c = g.add_node("Conv", [x, w]).outputs[0]
    r = g.add_node("Relu", [c]).outputs[0]
    g.outputs = [r, g.add_node("Neg", [c]).outputs[0]]
    assert not ConvFusion().run(g).changed


def _chain(rng, shared_mid=False):
    g = Graph("chain")
    x = g.add_input("x", TensorType((3, 8)))
    b = g.add_initializer("b", rng.standard_normal(8).astype(np.float32))
    m = g.add_node("MatMul", [x, g.add_initializer("w", rng.standard_normal((8, 8)).astype(np.float32))]).outputs[0]
    a = g.add_node("Add", [m, b]).outputs[0]
    s = g.add_node("Sigmoid", [a]).outputs[0]
    y = g.add_node("Mul", [a, s]).outputs[0]  # SiLU: a * sigmoid(a): a is read twice, both inside the group
    t = g.add_node("Tanh", [y]).outputs[0]
    outs = [t]
    if shared_mid:
        outs.append(g.add_node("MatMul", [y, g.initializers and "w"]).outputs[0])  # y also read outside
    g.outputs = outs
    return g


def test_elementwise_chain_fuses_into_one_node():
    rng = np.random.default_rng()
    g = _chain(rng)
    res = ElementwiseFusion().run(g)
    assert [n.op for n in res.graph.nodes] == ["MatMul", "FusedElementwise"]
    fused = res.graph.nodes[1]
    assert [json.loads(s)["op"] for s in fused.attrs["program"]] == ["Add", "Sigmoid", "Mul", "Tanh"]
    assert res.stats == {"groups": 1, "ops_fused": 4, "refused": 0}
    assert max_output_error(g, res.graph) <= 1e-6


def test_no_fusion_across_a_value_with_other_readers_unless_recomputing():
    rng = np.random.default_rng()
    g = _chain(rng, shared_mid=True)
    res = ElementwiseFusion().run(g)
    ops = [n.op for n in res.graph.nodes]
    assert ops.count("FusedElementwise") == 1 and res.stats["refused"] >= 1
    # the shared value y is still materialized by a node
    assert any(n.outputs[0] == g.nodes[3].outputs[0] for n in res.graph.nodes)
    assert max_output_error(g, res.graph) <= 1e-6
    rec = ElementwiseFusion(recompute=True).run(g)
    assert max_output_error(g, rec.graph) <= 1e-6
    tanh_group = [n for n in rec.graph.nodes if n.op == "FusedElementwise" and n.outputs == g.outputs[:1]]
    assert len(tanh_group) == 1 and len(tanh_group[0].attrs["program"]) == 4  # y = a*sigmoid(a) recomputed inside
    assert [n.op for n in rec.graph.nodes].count("FusedElementwise") == 2  # and fused again for its other reader


def test_fused_ops_check_their_attributes():
    from infopt.ir import GraphError

    g = Graph("bad")
    x = g.add_input("x", TensorType((1, 1, 3, 3)))
    w = g.add_initializer("w", np.ones((1, 1, 1, 1), np.float32))
    with pytest.raises(GraphError, match="activation"):
        g.add_node("FusedConv", [x, w], {"activation": "Softplus"})
    with pytest.raises(GraphError, match="program"):
        g.add_node("FusedElementwise", [x], {})
