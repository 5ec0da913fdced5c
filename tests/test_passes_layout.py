"""Tests for infopt.passes.layout: NHWC convolutions, transpose sinking and cancellation keep meaning."""
import numpy as np

from infopt.ir import Graph, TensorType
from infopt.passes import ConvFusion, PassManager
from infopt.passes.equivalence import max_output_error
from infopt.passes.export import expand_fused
from infopt.passes.layout import ToNHWC, TransposeSinking


def _convnet(rng, fuse: bool) -> Graph:
    g = Graph("net")
    x = g.add_input("x", TensorType((1, 4, 7, 7)))
    h = x
    for k in range(3):
        w = g.add_initializer(f"w{k}", (0.3 * rng.standard_normal((4, 4, 3, 3))).astype(np.float32))
        c = g.add_node("Conv", [h, w], {"pads": [1, 1, 1, 1]}).outputs[0]
        if k == 2:
            c = g.add_node("Add", [c, x]).outputs[0]
        h = g.add_node("Relu", [c]).outputs[0]
    g.outputs = [g.add_node("GlobalAveragePool", [h]).outputs[0]]
    return ConvFusion()(g) if fuse else g


def test_nhwc_conversion_then_cancellation_leaves_one_transpose_at_each_end():
    rng = np.random.default_rng()
    for fuse in (False, True):
        g = _convnet(rng, fuse)
        nhwc = ToNHWC().run(g)
        assert nhwc.stats["convs"] == 3
        assert max_output_error(g, nhwc.graph) <= 1e-6
        sunk = TransposeSinking().run(nhwc.graph)
        ops = sunk.graph.op_counts()
        # entry: x -> NHWC for the first conv; exit: back to NCHW after the last conv (the residual x is NCHW)
        assert ops["Transpose"] == 2 and ops["ConvNHWC"] == 3
        assert sunk.graph.type_of(sunk.graph.nodes[1].outputs[0]).layout == "NHWC"
        assert max_output_error(g, sunk.graph) <= 1e-6
        if not fuse:
            assert sunk.stats["moved"] == 2  # through the first two Relus (the residual Add reads an NCHW input)


def test_expand_for_export_and_nothing_to_do_cases():
    rng = np.random.default_rng()
    g = _convnet(rng, True)
    out = PassManager([ToNHWC(), TransposeSinking()]).run(g).graph
    plain = expand_fused(out)
    assert "ConvNHWC" not in plain.op_counts()
    assert max_output_error(g, plain) <= 1e-6
    mlp = Graph("mlp")
    x = mlp.add_input("x", TensorType((2, 3)))
    mlp.outputs = [mlp.add_node("Relu", [x]).outputs[0]]
    assert not ToNHWC().run(mlp).changed and not TransposeSinking().run(mlp).changed
