"""Tests for infopt.passes.pipeline: the whole pipeline preserves meaning on ResNet-18, the transformer block
and seeded random graphs (interpreter, 1e-5 relative), and its export agrees in onnxruntime (ORT_DISABLE_ALL)."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import (AlgebraicSimplification, DeadCodeElimination, ElementwiseFusion, PassManager,
                           default_pipeline, optimize,
                           plan_memory)
from infopt.passes.equivalence import max_output_error, random_feeds
from infopt.passes.export import export_optimized
from infopt.runtime.onnxruntime_session import ort_kernel_count, ort_run
from infopt.passes.rewrite import max_relative_error

TOL = 1e-5


def pass_soup_graph(seed: int, n_nodes: int = 24) -> Graph:
    """A seeded random graph full of what the passes look for: constant subexpressions, duplicates,
    neutral elements, divisions by constants, powers, transposes and reshapes in pairs, dead branches."""
    rng = np.random.default_rng(seed)
    g = Graph(f"soup{seed}")
    shape = (2, 3, 4)
    live = [g.add_input("x", TensorType(shape)), g.add_input("y", TensorType(shape))]

    def const(v):
        return g.add_initializer(g.fresh_name("c"), np.asarray(v, np.float32))

    for _ in range(n_nodes):
        a, b = (live[int(i)] for i in rng.integers(0, len(live), 2))
        kind = int(rng.integers(0, 14))
        if kind == 0:
            out = g.add_node(str(rng.choice(["Add", "Mul", "Sub"])), [a, b]).outputs[0]
        elif kind == 1:
            out = g.add_node("Mul", [a, const(np.ones(shape[-1]))]).outputs[0]
        elif kind == 2:
            out = g.add_node("Add", [const(0.0), a]).outputs[0]
        elif kind == 3:
            out = g.add_node("Div", [a, const(rng.uniform(1, 3))]).outputs[0]
        elif kind == 4:
            pos = g.add_node("Sigmoid", [a]).outputs[0]
            out = g.add_node("Pow", [pos, const(float(rng.choice([0.5, 1.0, 2.0])))]).outputs[0]
        elif kind == 5:
            t = g.add_node("Transpose", [a], {"perm": [1, 2, 0]}).outputs[0]
            out = g.add_node("Transpose", [t], {"perm": [2, 0, 1]}).outputs[0]
        elif kind == 6:
            r = g.add_node("Reshape", [a, g.add_initializer(g.fresh_name("s"), np.array([6, 4]))]).outputs[0]
            out = g.add_node("Reshape", [r, g.add_initializer(g.fresh_name("s"), np.array(shape))]).outputs[0]
        elif kind == 7:
            c = g.add_node("Exp", [const(rng.standard_normal(shape[-1]))]).outputs[0]  # foldable
            out = g.add_node("Mul", [a, c]).outputs[0]
        elif kind == 8:
            op = str(rng.choice(["Add", "Mul"]))
            g.add_node(op, [a, b])
            out = g.add_node(op, [b, a]).outputs[0]  # a duplicate for CSE
        elif kind == 9:
            g.add_node("Exp", [a])  # dead
            continue
        elif kind == 10:
            out = g.add_node("Identity", [a]).outputs[0]
        elif kind == 11:
            out = g.add_node("MatMul", [a, const(0.5 * rng.standard_normal((4, 4)))]).outputs[0]
        else:
            out = g.add_node(str(rng.choice(["Relu", "Tanh", "Sigmoid", "Neg"])), [a]).outputs[0]
        live.append(out)
    g.outputs = list(dict.fromkeys(live[-3:]))
    if set(g.outputs) & set(g.inputs):
        g.outputs = [g.add_node("Neg", [o]).outputs[0] for o in g.outputs]
    return g


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_keep_their_meaning(seed):
    g = pass_soup_graph(seed)
    res = optimize(g)
    assert len(res.graph) <= len(g)
    assert max_output_error(g, res.graph, seed=seed) <= TOL
    recompute = PassManager([AlgebraicSimplification(), ElementwiseFusion(recompute=True), DeadCodeElimination()])
    with_recompute = recompute.run(g).graph
    assert max_output_error(g, with_recompute, seed=seed + 100) <= TOL


def test_random_graphs_shrink():
    before = after = 0
    for seed in range(12):
        g = pass_soup_graph(seed)
        before += len(g)
        after += len(optimize(g).graph)
    assert after < 0.7 * before


@pytest.fixture(scope="module")
def resnet18():
    from infopt.ir.onnx_io import from_onnx
    from infopt.models import resnet18_onnx

    model = resnet18_onnx(do_constant_folding=False, size=64)
    return model, from_onnx(model)


def test_resnet18_pipeline_keeps_meaning_and_fuses(resnet18):
    model, g = resnet18
    res = optimize(g)
    counts = res.graph.op_counts()
    assert "BatchNormalization" not in counts and "Relu" not in counts and "Add" not in counts
    assert counts["FusedConv"] == 17 and len(res.graph) < 0.4 * len(g)
    feeds = random_feeds(g, np.random.default_rng())
    assert max_output_error(g, res.graph, feeds) <= TOL
    # the exported optimized graph agrees in onnxruntime with its own optimizations off, and runs fewer kernels
    for target in ("ort", "onnx"):
        out = ort_run(export_optimized(res.graph, target), feeds)[0]
        ref = ort_run(model, feeds)[0]
        assert max_relative_error(out, ref) <= TOL
    assert ort_kernel_count(export_optimized(res.graph, "ort"), feeds) == len(res.graph)
    assert ort_kernel_count(model, feeds) == len(g)


def test_resnet18_memory_plan_is_near_the_lower_bound(resnet18):
    _, g = resnet18
    plan = plan_memory(optimize(g).graph)
    s = plan.summary()
    assert s["plan_over_lower_bound"] <= 1.05 and s["plan_over_no_reuse"] < 0.5


def test_transformer_block_keeps_meaning():
    from infopt.ir.onnx_io import from_onnx
    from infopt.models import transformer_block_onnx

    model = transformer_block_onnx(do_constant_folding=False)
    g = from_onnx(model)
    res = optimize(g)
    assert len(res.graph) < len(g) and "FusedElementwise" in res.graph.op_counts()
    feeds = random_feeds(g, np.random.default_rng())
    assert max_output_error(g, res.graph, feeds) <= TOL
    out = ort_run(export_optimized(res.graph, "onnx"), feeds)[0]
    assert max_relative_error(out, ort_run(model, feeds)[0]) <= TOL


def test_pipeline_with_the_nchwc_layout(resnet18):
    model, g = resnet18
    res = default_pipeline(nchwc=True).run(g, snapshots=True)
    assert res.records[-1].pass_name == "to_nchwc" and len(res.snapshots) == len(res.records) + 1
    assert res.graph.op_counts()["NchwcConv"] == 20
    feeds = random_feeds(g, np.random.default_rng())
    assert max_relative_error(ort_run(export_optimized(res.graph, "ort"), feeds)[0], ort_run(model, feeds)[0]) <= TOL
