"""Tests for infopt.passes.export and runtime.onnxruntime_session: fused graphs expand to standard ONNX or export as ORT
contrib ops, and onnxruntime's profiler counts the kernels it runs."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import ConvFusion, ElementwiseFusion
from infopt.passes.equivalence import max_output_error, random_feeds
from infopt.passes.export import expand_fused, export_optimized
from infopt.runtime.onnxruntime_session import ort_kernels, ort_run
from infopt.passes.rewrite import max_relative_error


def _fused_graph(rng):
    g = Graph("fused")
    x = g.add_input("x", TensorType((1, 3, 6, 6)))
    w = g.add_initializer("w", rng.standard_normal((3, 3, 3, 3)).astype(np.float32))
    b = g.add_initializer("b", rng.standard_normal(3).astype(np.float32))
    c = g.add_node("Conv", [x, w, b], {"pads": [1, 1, 1, 1]}).outputs[0]
    a = g.add_node("Add", [c, x]).outputs[0]
    r = g.add_node("Relu", [a]).outputs[0]
    s = g.add_node("Sigmoid", [r]).outputs[0]
    g.outputs = [g.add_node("Mul", [s, r]).outputs[0]]
    return ElementwiseFusion()(ConvFusion()(g)), g


def test_expand_fused_gives_back_standard_ops():
    rng = np.random.default_rng()
    fused, orig = _fused_graph(rng)
    assert [n.op for n in fused.nodes] == ["FusedConv", "FusedElementwise"]
    plain = expand_fused(fused)
    assert [n.op for n in plain.nodes] == ["Conv", "Add", "Relu", "Sigmoid", "Mul"]
    assert max_output_error(orig, plain) <= 1e-6
    kept = expand_fused(fused, keep_fused_conv=True)
    assert [n.op for n in kept.nodes] == ["FusedConv", "Sigmoid", "Mul"]


@pytest.mark.parametrize("target, kernels", [("ort", {"FusedConv": 1, "Mul": 1, "Sigmoid": 1}),
                                             ("onnx", {"Add": 1, "Conv": 1, "Mul": 1, "Relu": 1, "Sigmoid": 1})])
def test_export_runs_in_onnxruntime(target, kernels):
    rng = np.random.default_rng()
    fused, orig = _fused_graph(rng)
    model = export_optimized(fused, target)
    feeds = random_feeds(orig, rng)
    from infopt.ir.interpreter import run_graph

    ref = run_graph(orig, feeds)[orig.outputs[0]]
    assert max_relative_error(ort_run(model, feeds)[0], ref) <= 1e-5
    assert ort_kernels(model, feeds) == dict(sorted(kernels.items(), key=lambda kv: (-kv[1], kv[0])))


def test_bad_arguments():
    fused, _ = _fused_graph(np.random.default_rng())
    with pytest.raises(ValueError, match="target"):
        export_optimized(fused, "tensorrt")
    from infopt.runtime.onnxruntime_session import ort_session

    with pytest.raises(ValueError, match="level"):
        ort_session(export_optimized(fused), "max")
