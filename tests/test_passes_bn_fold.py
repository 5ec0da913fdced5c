"""Tests for infopt.passes.bn_fold: folded weights equal Conv/Gemm followed by BN (checked against torch)."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import BatchNormFolding, fold_bn_into_conv
from infopt.passes.equivalence import max_output_error


def _bn_params(rng, c):
    return (rng.uniform(0.5, 2, c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
            rng.standard_normal(c).astype(np.float32), rng.uniform(0.01, 2, c).astype(np.float32))


@pytest.mark.parametrize("groups, bias, eps", [(1, True, 1e-5), (2, False, 1e-3), (4, True, 0.1)])
def test_fold_bn_into_conv_matches_torch(groups, bias, eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    cin, cout = 8, 12
    w = rng.standard_normal((cout, cin // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    scale, shift, mean, var = _bn_params(rng, cout)
    x = torch.from_numpy(rng.standard_normal((2, cin, 9, 9)).astype(np.float32))
    ref = torch.nn.functional.conv2d(x, torch.from_numpy(w), None if b is None else torch.from_numpy(b),
                                     padding=1, groups=groups)
    ref = torch.nn.functional.batch_norm(ref, torch.from_numpy(mean), torch.from_numpy(var), torch.from_numpy(scale),
                                         torch.from_numpy(shift), training=False, eps=eps)
    w2, b2 = fold_bn_into_conv(w, b, scale, shift, mean, var, eps)
    assert w2.dtype == np.float32 and w2.shape == w.shape and b2.shape == (cout,)
    got = torch.nn.functional.conv2d(x, torch.from_numpy(w2), torch.from_numpy(b2), padding=1, groups=groups)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


def _conv_bn_graph(rng, eps=1e-5, shared=False):
    g = Graph("cbn")
    x = g.add_input("x", TensorType((1, 3, 8, 8)))
    w = g.add_initializer("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    c = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1]}, outputs=["c"]).outputs[0]
    params = [g.add_initializer(n, v) for n, v in zip(["s", "b", "m", "v"], _bn_params(rng, 4))]
    y = g.add_node("BatchNormalization", [c, *params], {"epsilon": eps}, outputs=["y"]).outputs[0]
    g.outputs = [y, c] if shared else [y]
    return g


def test_pass_folds_conv_bn_and_respects_epsilon():
    rng = np.random.default_rng()
    g = _conv_bn_graph(rng, eps=0.5)  # a large epsilon: forgetting it would show
    res = BatchNormFolding().run(g)
    assert res.stats == {"folded": 1, "kept": 0}
    assert [n.op for n in res.graph.nodes] == ["Conv"] and res.graph.outputs == ["y"]
    assert len(res.graph.nodes[0].inputs) == 3  # a bias appeared
    assert max_output_error(g, res.graph) <= 1e-5


def test_conv_output_with_other_readers_is_not_folded():
    g = _conv_bn_graph(np.random.default_rng(), shared=True)
    res = BatchNormFolding().run(g)
    assert not res.changed and "1 not after" in res.reason


@pytest.mark.parametrize("trans_b, with_c", [(0, True), (1, False), (1, True)])
def test_gemm_bn_folding(trans_b, with_c):
    rng = np.random.default_rng()
    g = Graph("gemm")
    x = g.add_input("x", TensorType((5, 6)))
    wshape = (7, 6) if trans_b else (6, 7)
    ins = [x, g.add_initializer("w", rng.standard_normal(wshape).astype(np.float32))]
    if with_c:
        ins.append(g.add_initializer("c", rng.standard_normal(7).astype(np.float32)))
    h = g.add_node("Gemm", ins, {"transB": trans_b, "alpha": 0.7, "beta": 1.3}).outputs[0]
    params = [g.add_initializer(n, v) for n, v in zip(["s", "b", "m", "v"], _bn_params(rng, 7))]
    g.outputs = [g.add_node("BatchNormalization", [h, *params], {"epsilon": 1e-3}).outputs[0]]
    res = BatchNormFolding().run(g)
    assert [n.op for n in res.graph.nodes] == ["Gemm"]
    assert max_output_error(g, res.graph) <= 1e-5
