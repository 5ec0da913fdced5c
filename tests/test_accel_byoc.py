"""BYOC: annotate / partition / AccelCall on the infopt graph, end to end on the digits MLP and CNN."""
import numpy as np
import pytest

from infopt.accel import AccelConfig, matmul_cycles
from infopt.accel.byoc import PartitionForAccel, annotate, execute, offload, partition, run_offloaded
from infopt.ir import Graph, TensorType


def _chain_graph(rng):
    """x -> MatMul(w1) -> Sigmoid (CPU) ; MatMul(a, sig) needs both: it may not join a's group (cycle)."""
    g = Graph("chain")
    g.add_input("x", TensorType((5, 4)))
    g.add_initializer("w1", rng.standard_normal((4, 4)).astype(np.float32))
    a = g.add_node("MatMul", ["x", "w1"], name="mm1").outputs[0]
    r = g.add_node("Relu", [a], name="relu1").outputs[0]
    s = g.add_node("Sigmoid", [r], name="sig").outputs[0]
    c = g.add_node("MatMul", [r, g.add_initializer("w2", rng.standard_normal((4, 4)).astype(np.float32))],
                   name="mm2").outputs[0]
    d = g.add_node("MatMul", [c, g.add_node("Transpose", [s], {"perm": [1, 0]}, name="tr").outputs[0]],
                   name="mm3").outputs[0]
    g.outputs = [d]
    return g


def test_partition_respects_dependencies():
    rng = np.random.default_rng()
    g = _chain_graph(rng)
    cfg = AccelConfig(4, 4, "ws", "float32")
    notes = annotate(g, cfg)
    assert [n for n, a in notes.items() if a.offload] == ["mm1", "relu1", "mm2", "mm3"]
    assert "fused" in notes["relu1"].reason and not notes["sig"].offload
    groups = partition(g, [n for n, a in notes.items() if a.offload])
    # mm3 reads sig's output, which depends on mm1's group through the CPU: it starts a new group
    assert groups == [["mm1", "relu1", "mm2"], ["mm3"]]
    g2 = offload(g, cfg)
    assert [n.op for n in g2.nodes].count("AccelCall") == 2 and len(g.nodes) == 6  # input untouched
    x = rng.standard_normal((5, 4)).astype(np.float32)
    ref = execute(g, {"x": x})
    out, rep = run_offloaded(g2, {"x": x})
    np.testing.assert_allclose(out[g.outputs[0]], ref[g.outputs[0]], rtol=1e-5, atol=1e-5)
    assert [r["layer"] for r in rep.table()] == ["mm1", "mm2", "mm3"] and rep.table()[0]["op"] == "MatMul+Relu"


def test_relu_not_fused_when_preact_is_used_elsewhere():
    rng = np.random.default_rng()
    g = Graph("two_uses")
    g.add_input("x", TensorType((3, 4)))
    a = g.add_node("MatMul", ["x", g.add_initializer("w", rng.standard_normal((4, 4)).astype(np.float32))],
                   name="mm").outputs[0]
    r = g.add_node("Relu", [a], name="relu").outputs[0]
    g.outputs = [r, a]
    notes = annotate(g, AccelConfig(4, 4, "os", "float32"))
    assert notes["mm"].offload and not notes["relu"].offload and "elsewhere" in notes["relu"].reason


def test_annotate_explains_refusals_and_pass_skips():
    g = Graph("int")
    g.add_input("x", TensorType((3, 4), "f32"))
    g.add_initializer("w", np.ones((4, 2), np.float32))
    g.add_node("MatMul", ["x", "w"], name="mm")
    g.outputs = [g.nodes[0].outputs[0]]
    notes = annotate(g, AccelConfig(dtype="int8"))
    assert not notes["mm"].offload and "int8" in notes["mm"].reason
    res = PartitionForAccel(AccelConfig(dtype="int8")).run(g)
    assert not res.changed and "no node" in res.reason


@pytest.fixture(scope="module")
def digits_graphs():
    torch = pytest.importorskip("torch")
    from infopt.ir.onnx_io import from_onnx
    from infopt.models import digits_cnn, digits_mlp, export_onnx

    return {name: from_onnx(export_onnx(mk(), torch.zeros(8, 1, 8, 8))) for name, mk in
            (("mlp", digits_mlp), ("cnn", digits_cnn))}


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_digits_models_end_to_end(digits_graphs, model, dataflow):
    from infopt.data import load_digits_split

    g = digits_graphs[model]
    x = load_digits_split().x_test[:8].reshape(8, 1, 8, 8).astype(np.float32)
    cfg = AccelConfig(8, 8, dataflow, "float32")
    g2 = offload(g, cfg)
    cpu_ops = {n.op for n in g2.nodes} - {"AccelCall"}
    assert cpu_ops == ({"Flatten"} if model == "mlp" else {"Flatten", "MaxPool"})
    ref = execute(g, {"input": x})["output"]
    out, rep = run_offloaded(g2, {"input": x})
    np.testing.assert_allclose(out["output"], ref, rtol=1e-4, atol=1e-4)
    rows = rep.table()
    assert len(rows) == (3 if model == "mlp" else 4)
    for r in rows:  # each layer's cycles are the driver's analytic count for its matmul
        assert r["cycles"] == matmul_cycles(r["M"], r["N"], r["K"], cfg, bias=True)
    assert "total" in rep.format()


def test_conv_im2col_and_batched_matmul_match_interpreter():
    rng = np.random.default_rng()
    for _ in range(3):
        g = Graph("conv")
        cin, cout = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        g.add_input("x", TensorType((2, cin, 9, 8)))
        attrs = {"strides": [int(s) for s in rng.integers(1, 3, 2)], "dilations": [int(d) for d in rng.integers(1, 3, 2)],
                 "pads": [int(p) for p in rng.integers(0, 3, 4)], "kernel_shape": [3, 2]}
        w = g.add_initializer("w", rng.standard_normal((cout, cin, 3, 2)).astype(np.float32))
        b = g.add_initializer("b", rng.standard_normal(cout).astype(np.float32))
        y = g.add_node("Conv", ["x", w, b], attrs, name="conv").outputs[0]
        y = g.add_node("Relu", [y], name="relu").outputs[0]
        z = g.add_node("MatMul", [y, g.add_initializer("m", rng.standard_normal((g.type_of(y).shape[-1], 3)).astype(np.float32))],
                       name="mm3d").outputs[0]  # (2, cout, Ho, Wo) x (Wo, 3): leading dims flatten into M
        g.outputs = [z]
        cfg = AccelConfig(int(rng.integers(2, 6)), int(rng.integers(2, 6)), str(rng.choice(["ws", "os"])), "float32")
        g2 = offload(g, cfg)
        assert [n.op for n in g2.nodes] == ["AccelCall"]
        x = rng.standard_normal((2, cin, 9, 8)).astype(np.float32)
        out, rep = run_offloaded(g2, {"x": x})
        np.testing.assert_allclose(out[z], execute(g, {"x": x})[z], rtol=1e-4, atol=1e-4)
        assert [r["op"] for r in rep.table()] == ["Conv+Relu", "MatMul"]
