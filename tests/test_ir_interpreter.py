"""The interpreter: results against independent evaluations, feed checking, freeing, tracing."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from infopt.ir import Graph, GraphError, TensorType, run_graph
from infopt.ir.interpreter import NodeTiming
from tests.strategies import graphs, random_feeds

TORCH = {
    "Relu": torch.relu, "Neg": torch.neg, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Identity": lambda t: t,
    "Gelu": F.gelu, "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Max": torch.maximum,
    "Min": torch.minimum, "Div": torch.div, "MatMul": torch.matmul,
}


def torch_eval(g: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Evaluate a random graph with torch, demand-driven from the outputs (not in node order)."""
    producer = {o: n for n in g.nodes for o in n.outputs}
    memo: dict[str, torch.Tensor] = {}

    def value(name: str) -> torch.Tensor:
        if name not in memo:
            if name in feeds:
                memo[name] = torch.from_numpy(feeds[name]).double()
            elif name in g.initializers:
                memo[name] = torch.from_numpy(np.asarray(g.initializers[name])).double()
            else:
                node = producer[name]
                memo[name] = TORCH[node.op](*(value(i) for i in node.inputs))
        return memo[name]

    return {o: value(o).numpy() for o in g.outputs}


@settings(max_examples=40, deadline=None)
@given(graphs(16), st.integers(0, 2**31 - 1))
def test_random_graphs_match_torch(g, seed):
    feeds = random_feeds(g, seed)
    got = run_graph(g, feeds)
    want = torch_eval(g, feeds)
    assert list(got) == g.outputs
    for name in g.outputs:
        assert got[name].dtype == np.float32
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def small_cnn(rng) -> tuple[Graph, dict]:
    """conv-bn-relu-maxpool, a residual conv-bn + add, global pool, flatten, gemm: ResNet's ops in miniature."""
    p = {
        "w1": rng.standard_normal((8, 3, 3, 3)) * 0.3, "w2": rng.standard_normal((8, 8, 3, 3)) * 0.1,
        "s": rng.uniform(0.5, 1.5, 8), "b": rng.standard_normal(8), "m": rng.standard_normal(8),
        "v": rng.uniform(0.5, 2, 8), "fc": rng.standard_normal((5, 8)), "fcb": rng.standard_normal(5),
    }
    p = {k: v.astype(np.float32) for k, v in p.items()}
    g = Graph("small_cnn")
    g.add_input("img", TensorType((2, 3, 16, 16), layout="NCHW"))
    for k, v in p.items():
        g.add_initializer(k, v)
    c = g.add_node("Conv", ["img", "w1"], {"pads": [1, 1, 1, 1], "strides": [2, 2]}).outputs[0]
    bn = g.add_node("BatchNormalization", [c, "s", "b", "m", "v"], {"epsilon": 1e-5}).outputs[0]
    r = g.add_node("Relu", [bn]).outputs[0]
    mp = g.add_node("MaxPool", [r], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}).outputs[0]
    c2 = g.add_node("Conv", [mp, "w2"], {"pads": [1, 1, 1, 1]}).outputs[0]
    bn2 = g.add_node("BatchNormalization", [c2, "s", "b", "m", "v"]).outputs[0]
    a = g.add_node("Add", [bn2, mp]).outputs[0]
    r2 = g.add_node("Relu", [a]).outputs[0]
    gp = g.add_node("GlobalAveragePool", [r2]).outputs[0]
    f = g.add_node("Flatten", [gp]).outputs[0]
    out = g.add_node("Gemm", [f, "fc", "fcb"], {"transB": 1}, outputs=["logits"]).outputs[0]
    g.outputs = [out]
    return g, p


def test_small_cnn_matches_torch(rng):
    g, p = small_cnn(rng)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    bn = lambda z: F.batch_norm(z, t["m"], t["v"], t["s"], t["b"], eps=1e-5)  # noqa: E731
    y = F.max_pool2d(torch.relu(bn(F.conv2d(torch.from_numpy(x), t["w1"], stride=2, padding=1))), 3, 2, 1)
    y = torch.relu(bn(F.conv2d(y, t["w2"], padding=1)) + y)
    want = F.linear(y.mean((2, 3)), t["fc"], t["fcb"]).numpy()
    got = run_graph(g, {"img": x})["logits"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.fixture
def rng():
    return np.random.default_rng(int(np.random.SeedSequence().entropy % 2**32))


def simple() -> Graph:
    g = Graph("simple")
    g.add_input("x", TensorType((2, 3)))
    g.add_input("k", TensorType((3,), "i64"))
    g.add_node("Relu", ["x"], outputs=["y"])
    g.outputs = ["y", "k"]
    return g


@pytest.mark.parametrize("feeds,pattern", [
    ({"x": np.zeros((2, 3), np.float32)}, r"missing k"),
    ({"x": np.zeros((2, 3), np.float32), "k": np.zeros(3, np.int64), "z": 1}, r"unexpected z"),
    ({"x": np.zeros((3, 2), np.float32), "k": np.zeros(3, np.int64)}, r"input x must be f32\[2, 3\].*shape \(3, 2\)"),
    ({"x": np.zeros((2, 3), np.float64), "k": np.zeros(3, np.int64)}, r"input x must be f32.*float64"),
    ({"x": np.zeros((2, 3), np.float32), "k": np.zeros(3, np.int32)}, r"input k must be i64.*int32"),
])
def test_feed_errors_are_clear(feeds, pattern):
    with pytest.raises(GraphError, match=pattern):
        run_graph(simple(), feeds)


def test_outputs_can_be_inputs_and_keys_follow_graph_outputs():
    k = np.arange(3)
    out = run_graph(simple(), {"x": -np.ones((2, 3), np.float32), "k": k})
    assert list(out) == ["y", "k"] and (out["y"] == 0).all() and (out["k"] == k).all()


def test_trace_times_every_node_and_values_are_freed():
    g = Graph("chain")
    g.add_input("x", TensorType((1000,)))
    v = "x"
    for _ in range(20):
        v = g.add_node("Neg", [v]).outputs[0]
    g.outputs = [v]
    out, trace = run_graph(g, {"x": np.ones(1000, np.float32)}, trace=True)
    assert (out[v] == 1).all()
    assert len(trace) == 20 and all(isinstance(t, NodeTiming) and t.seconds >= 0 for t in trace)
    assert [t.op for t in trace] == ["Neg"] * 20
    # A chain keeps at most its input and its output alive: frees happen after each last use.
    assert max(t.live_bytes for t in trace) <= 2 * 4000, [t.live_bytes for t in trace]


def test_kernel_type_mismatch_names_the_node():
    g = simple()
    g.types["y"] = TensorType((2, 4))
    with pytest.raises(GraphError, match=r"node .*Relu.*%y.*f32\[2,4\]"):
        run_graph(g, {"x": np.zeros((2, 3), np.float32), "k": np.zeros(3, np.int64)})


def test_runs_in_topological_order_not_stored_order():
    g = Graph("g")
    g.add_input("x", TensorType((2,)))
    a = g.add_node("Neg", ["x"], outputs=["a"])
    b = g.add_node("Exp", ["a"], outputs=["b"])
    g.nodes = [b, a]
    g.outputs = ["b"]
    x = np.array([0.5, -1.0], np.float32)
    np.testing.assert_allclose(run_graph(g, {"x": x})["b"], np.exp(-x), rtol=1e-6)


def test_ieee_results_without_warnings():
    g = Graph("g")
    g.add_input("x", TensorType((3,)))
    g.add_node("Sqrt", ["x"], outputs=["s"])
    g.add_node("Log", ["x"], outputs=["l"])
    g.outputs = ["s", "l"]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run_graph(g, {"x": np.array([-1.0, 0.0, 4.0], np.float32)})
    assert np.isnan(out["s"][0]) and out["s"][2] == 2 and out["l"][1] == -np.inf
