"""Each op's shape inference and numpy kernel against torch (or an independent numpy formulation)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from infopt.ir import Graph, GraphError, TensorType, get_op, infer_node
from infopt.ir.ops import OPS, UnsupportedOpError, constant_value


@pytest.fixture
def rng(request):
    """A fresh generator per test; the seed is shown if the test fails."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    request.node.user_properties.append(("seed", seed))
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def run(op: str, inputs: list, attrs: dict | None = None, n_out: int = 1, const: tuple[int, ...] = ()):
    """Build a one-node graph (inputs at positions ``const`` are initializers), infer, compute, and check
    that the computed outputs have exactly the inferred types. Returns the outputs."""
    g = Graph("t")
    names = []
    for k, a in enumerate(inputs):
        if a is None:
            names.append("")
        elif k in const:
            names.append(g.add_initializer(f"c{k}", np.asarray(a)))
        else:
            names.append(g.add_input(f"x{k}", TensorType.of(np.asarray(a))))
    node = g.add_node(op, names, attrs or {}, outputs=n_out)
    outs = get_op(op).compute([None if a is None else np.asarray(a) for a in inputs], node.attrs)
    outs = outs[: len(node.outputs)]
    for name, o in zip(node.outputs, outs):
        t = g.types[name]
        assert tuple(o.shape) == t.shape, f"{op}: computed shape {o.shape} but inferred {t}"
        assert TensorType.of(o).dtype == t.dtype, f"{op}: computed dtype {o.dtype} but inferred {t}"
    return outs if n_out > 1 else outs[0]


def rnd(rng, *shape, dtype=np.float32):
    return np.asarray(rng.standard_normal(shape)).astype(dtype)


def close(got, want, tol=1e-5):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


def T(a):
    return torch.from_numpy(np.asarray(a))


# ----- elementwise ---------------------------------------------------------------------------
UNARY = {
    "Relu": torch.relu, "Neg": torch.neg, "Sqrt": torch.sqrt, "Exp": torch.exp, "Log": torch.log,
    "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Erf": torch.erf, "Gelu": F.gelu, "Identity": lambda t: t,
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_torch(op, rng):
    x = rnd(rng, 3, 4, 5) * 3
    if op in ("Sqrt", "Log"):
        x = np.abs(x) + 0.1
    close(run(op, [x]), UNARY[op](T(x)).numpy())


def test_erf_and_gelu_are_accurate_everywhere(rng):
    x = np.concatenate([np.linspace(-8, 8, 4001), rng.standard_normal(1000) * 1e-3]).astype(np.float32)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    close(run("Erf", [x]), want, 3e-7)
    g = run("Gelu", [x])
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    np.testing.assert_allclose(g, ref, rtol=2e-6, atol=1e-30)  # relative, even for x << 0
    close(run("Gelu", [x], {"approximate": "tanh"}), F.gelu(T(x), approximate="tanh").numpy())


BINARY = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
          "Max": torch.maximum, "Min": torch.minimum, "Equal": torch.eq}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(BINARY)), st.lists(st.integers(1, 4), min_size=0, max_size=4),
       st.lists(st.booleans(), min_size=4, max_size=4), st.integers(0, 2**31))
def test_binary_broadcasting_matches_torch(op, shape, ones, seed):
    rng = np.random.default_rng(seed)
    a_shape = tuple(shape)
    b_shape = tuple(1 if o else d for d, o in zip(shape, ones))[ones.count(True) % 2:]  # drop a leading dim at times
    a, b = rnd(rng, *a_shape), rnd(rng, *b_shape)
    if op == "Pow":
        a = np.abs(a) + 0.5
    if op == "Equal":  # small integers, so that some entries are equal
        a, b = np.round(a), np.round(b)
    close(run(op, [a, b]), BINARY[op](T(a), T(b)).numpy())


def test_integer_div_truncates_toward_zero():
    a, b = np.array([7, -7, 7, -7], np.int64), np.array([2, 2, -2, -2], np.int64)
    np.testing.assert_array_equal(run("Div", [a, b]), [3, -3, -3, 3])


def test_variadic_max_min_and_where_clip_cast(rng):
    a, b, c = rnd(rng, 2, 3), rnd(rng, 3), rnd(rng, 1, 1)
    close(run("Max", [a, b, c]), np.maximum(np.maximum(a, b), c))
    close(run("Min", [a]), a)
    cond = rng.random((2, 1)) < 0.5
    close(run("Where", [cond, a, b]), torch.where(T(cond), T(a), T(b)).numpy())
    lo, hi = np.float32(-0.5), np.float32(0.3)
    close(run("Clip", [a, lo, hi]), torch.clamp(T(a), -0.5, 0.3).numpy())
    close(run("Clip", [a, None, hi]), np.minimum(a, hi))
    assert run("Cast", [a], {"to": 7}).dtype == np.int64
    np.testing.assert_array_equal(run("Cast", [a * 10], {"to": 6}), (a * 10).astype(np.int32))


def test_elementwise_errors_name_the_problem():
    g = Graph()
    g.add_input("a", TensorType((2, 3)))
    g.add_input("b", TensorType((4, 3)))
    g.add_input("i", TensorType((2, 3), "i64"))
    with pytest.raises(GraphError, match=r"Add.*\(2, 3\) and \(4, 3\).*dimension -2"):
        g.add_node("Add", ["a", "b"])
    with pytest.raises(GraphError, match="dtypes differ.*Cast"):
        g.add_node("Mul", ["a", "i"])
    with pytest.raises(GraphError, match="floating-point"):
        g.add_node("Sqrt", ["i"])
    with pytest.raises(GraphError, match="'to'"):
        g.add_node("Cast", ["a"], {"to": "f32"})
    with pytest.raises(GraphError, match="takes 2..2 inputs"):
        g.add_node("Add", ["a"])
    with pytest.raises(UnsupportedOpError, match="'Foo'"):
        g.add_node("Foo", ["a"])


# ----- conv / pool / norm --------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(st.integers(1, 2), st.sampled_from([1, 2, 3]), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2),
       st.integers(1, 2), st.integers(0, 2), st.booleans(), st.integers(0, 2**31))
def test_conv2d_matches_torch(n, group, cin_g, cout_g, stride, dil, pad, bias, seed):
    rng = np.random.default_rng(seed)
    kh, kw = rng.integers(1, 4, size=2)
    h, w = (int(rng.integers((k - 1) * dil + 1, 10)) for k in (kh, kw))
    x = rnd(rng, n, cin_g * group, h, w)
    wt = rnd(rng, cout_g * group, cin_g, kh, kw)
    b = rnd(rng, cout_g * group) if bias else None
    attrs = {"strides": [stride, stride], "dilations": [dil, dil], "pads": [pad, pad, pad, pad], "group": group}
    y = run("Conv", [x, wt, b] if bias else [x, wt], attrs)
    ref = F.conv2d(T(x), T(wt), None if b is None else T(b), stride=stride, padding=pad, dilation=dil, groups=group)
    close(y, ref.numpy(), 1e-4)


def test_conv_asymmetric_pads_1d_and_auto_pad(rng):
    x, w = rnd(rng, 1, 3, 9, 8), rnd(rng, 4, 3, 3, 2)
    y = run("Conv", [x, w], {"pads": [0, 1, 2, 0]})
    close(y, F.conv2d(T(np.pad(x, [(0, 0), (0, 0), (0, 2), (1, 0)])), T(w)).numpy(), 1e-4)
    x1, w1 = rnd(rng, 2, 3, 10), rnd(rng, 5, 3, 3)
    close(run("Conv", [x1, w1], {"strides": [2]}), F.conv1d(T(x1), T(w1), stride=2).numpy(), 1e-4)
    y = run("Conv", [x, w], {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
    assert y.shape == (1, 4, 5, 4)


def test_conv_shape_errors_name_the_dimension():
    g = Graph()
    g.add_input("x", TensorType((1, 3, 8, 8)))
    g.add_initializer("w", np.zeros((8, 4, 3, 3), np.float32))
    g.add_initializer("w2", np.zeros((8, 3, 9, 9), np.float32))
    g.add_initializer("b", np.zeros((7,), np.float32))
    g.add_initializer("w3", np.zeros((8, 3, 3, 3), np.float32))
    with pytest.raises(GraphError, match=r"input has 3 channels but weight expects 4 \(weight shape \(8, 4, 3, 3\)\)"):
        g.add_node("Conv", ["x", "w"])
    with pytest.raises(GraphError, match="smaller than the kernel extent 9"):
        g.add_node("Conv", ["x", "w2"])
    with pytest.raises(GraphError, match=r"bias shape \(7,\) must be \(8,\)"):
        g.add_node("Conv", ["x", "w3", "b"])
    with pytest.raises(GraphError, match="group=2 must divide"):
        g.add_node("Conv", ["x", "w3"], {"group": 2})


@pytest.mark.parametrize("ceil", [0, 1])
def test_pools_match_torch(rng, ceil):
    x = rnd(rng, 2, 3, 11, 10)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": ceil}
    close(run("MaxPool", [x], attrs), F.max_pool2d(T(x), 3, 2, 1, ceil_mode=bool(ceil)).numpy())
    for inc in (0, 1):
        ref = F.avg_pool2d(T(x), 3, 2, 1, ceil_mode=bool(ceil), count_include_pad=bool(inc))
        close(run("AveragePool", [x], dict(attrs, count_include_pad=inc)), ref.numpy())
    close(run("GlobalAveragePool", [x]), x.mean(axis=(2, 3), keepdims=True))


def test_maxpool_dilation(rng):
    x = rnd(rng, 1, 2, 12, 12)
    attrs = {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]}
    close(run("MaxPool", [x], attrs), F.max_pool2d(T(x), (2, 3), (1, 2), dilation=2).numpy())


def test_batchnorm_matches_torch(rng):
    x = rnd(rng, 2, 5, 4, 3)
    s, b, m = rnd(rng, 5), rnd(rng, 5), rnd(rng, 5)
    v = np.abs(rnd(rng, 5)) + 0.1
    y = run("BatchNormalization", [x, s, b, m, v], {"epsilon": 1e-3})
    close(y, F.batch_norm(T(x), T(m), T(v), T(s), T(b), eps=1e-3).numpy(), 1e-5)
    g = Graph()
    g.add_input("x", TensorType((2, 5, 4)))
    for k in "sbmv":
        g.add_input(k, TensorType((4,)))
    with pytest.raises(GraphError, match=r"scale has shape \(4,\), expected \(5,\)"):
        g.add_node("BatchNormalization", ["x", "s", "b", "m", "v"])


def test_softmax_and_layernorm_match_torch(rng):
    x = rnd(rng, 2, 3, 7) * 4
    close(run("Softmax", [x]), torch.softmax(T(x), -1).numpy())
    close(run("Softmax", [x], {"axis": 1}), torch.softmax(T(x), 1).numpy())
    s, b = rnd(rng, 3, 7), rnd(rng, 3, 7)
    y, mean, inv = run("LayerNormalization", [x, s, b], {"axis": 1, "epsilon": 1e-5}, n_out=3)
    close(y, F.layer_norm(T(x), (3, 7), T(s), T(b), 1e-5).numpy(), 1e-5)
    close(mean, x.mean(axis=(1, 2), keepdims=True))
    close(inv, 1 / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5), 1e-4)
    close(run("LayerNormalization", [x, s[0]]), F.layer_norm(T(x), (7,), T(s[0]), None, 1e-5).numpy(), 1e-5)


# ----- linear algebra ------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
                                   ((4,), (4,))])
def test_matmul_numpy_rules(rng, sa, sb):
    a, b = rnd(rng, *sa), rnd(rng, *sb)
    close(run("MatMul", [a, b]), torch.matmul(T(a), T(b)).numpy(), 1e-5)


def test_matmul_error_names_inner_dims():
    g = Graph()
    g.add_input("a", TensorType((2, 3, 4)))
    g.add_input("b", TensorType((5, 6)))
    with pytest.raises(GraphError, match=r"a has K=4 \(shape \(2, 3, 4\)\) but b has K=5"):
        g.add_node("MatMul", ["a", "b"])


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(rng, ta, tb):
    a = rnd(rng, *((4, 3) if ta else (3, 4)))
    b = rnd(rng, *((5, 4) if tb else (4, 5)))
    c = rnd(rng, 5)
    want = 0.5 * (a.T if ta else a) @ (b.T if tb else b) + 2.0 * c
    close(run("Gemm", [a, b, c], {"alpha": 0.5, "beta": 2.0, "transA": ta, "transB": tb}), want, 1e-5)
    close(run("Gemm", [a, b], {"transA": ta, "transB": tb}), (a.T if ta else a) @ (b.T if tb else b), 1e-5)


# ----- tensor ops ----------------------------------------------------------------------------
def test_reshape_zero_and_minus_one(rng):
    x = rnd(rng, 2, 3, 4)
    assert run("Reshape", [x, np.array([0, -1], np.int64)], const=(1,)).shape == (2, 12)
    assert run("Reshape", [x, np.array([-1, 0, 2], np.int64)], const=(1,)).shape == (4, 3, 2)
    g = Graph()
    g.add_input("x", TensorType((2, 3, 4)))
    g.add_input("s", TensorType((2,), "i64"))
    with pytest.raises(GraphError, match="input 1 \\(shape\\) must be a constant"):
        g.add_node("Reshape", ["x", "s"])
    g.add_initializer("bad", np.array([5, -1], np.int64))
    with pytest.raises(GraphError, match="cannot infer the -1"):
        g.add_node("Reshape", ["x", "bad"])


def test_reshape_shape_from_a_shape_chain():
    """Exporters compute shapes with Shape -> Gather -> Concat; inference folds such chains."""
    g = Graph()
    g.add_input("x", TensorType((2, 3, 4)))
    g.add_initializer("i0", np.array(0, np.int64))
    g.add_initializer("m1", np.array([-1], np.int64))
    sh = g.add_node("Shape", ["x"]).outputs[0]
    n = g.add_node("Gather", [sh, "i0"]).outputs[0]
    u = g.add_node("Unsqueeze", [n, g.add_initializer("ax", np.array([0], np.int64))]).outputs[0]
    cat = g.add_node("Concat", [u, "m1"], {"axis": 0}).outputs[0]
    np.testing.assert_array_equal(constant_value(g, cat), [2, -1])
    r = g.add_node("Reshape", ["x", cat]).outputs[0]
    assert g.types[r].shape == (2, 12)


def test_flatten_transpose_concat(rng):
    x = rnd(rng, 2, 3, 4, 5)
    assert run("Flatten", [x]).shape == (2, 60)
    close(run("Flatten", [x], {"axis": -1}), x.reshape(24, 5))
    close(run("Flatten", [x], {"axis": 0}), x.reshape(1, -1))
    close(run("Transpose", [x], {"perm": [0, 2, 3, 1]}), x.transpose(0, 2, 3, 1))
    close(run("Transpose", [x]), x.T)
    y = rnd(rng, 2, 1, 4, 5)
    close(run("Concat", [x, y], {"axis": 1}), np.concatenate([x, y], 1))
    g = Graph()
    g.add_input("x", TensorType((1, 3, 8, 8), layout="NCHW"))
    t = g.add_node("Transpose", ["x"], {"perm": [0, 2, 3, 1]}).outputs[0]
    assert g.types[t] == TensorType((1, 8, 8, 3), layout="NHWC")
    g.add_input("y", TensorType((1, 3, 7, 8)))
    with pytest.raises(GraphError, match=r"input 1 has shape \(1, 3, 7, 8\).*differ only in dim 1"):
        g.add_node("Concat", ["x", "y"], {"axis": 1})


def test_split_is_concat_inverse(rng):
    x = rnd(rng, 2, 7, 3)
    parts = run("Split", [x, np.array([3, 0, 4], np.int64)], {"axis": -2}, n_out=3, const=(1,))
    assert [p.shape for p in parts] == [(2, 3, 3), (2, 0, 3), (2, 4, 3)]
    close(np.concatenate(parts, axis=1), x)
    close(parts[2], x[:, 3:])
    with pytest.raises(GraphError, match=r"sizes \[3, 3\] must .*add up to dim 1"):
        run("Split", [x, np.array([3, 3], np.int64)], {"axis": 1}, n_out=2, const=(1,))
    with pytest.raises(GraphError, match="defines 2 outputs but the node lists 3"):
        run("Split", [x, np.array([3, 4], np.int64)], {"axis": 1}, n_out=3, const=(1,))
    g = Graph()
    g.add_input("x", TensorType((2, 7)))
    g.add_input("s", TensorType((2,), "i64"))
    with pytest.raises(GraphError, match="split.*must be a constant"):
        g.add_node("Split", ["x", "s"], {"axis": 1}, outputs=2)
    with pytest.raises(GraphError, match="part sizes as input 1.*num_outputs"):
        g.add_node("Split", ["x"], {"axis": 1}, outputs=2)
    parts = run("Split", [x], {"axis": 1, "num_outputs": 3}, n_out=3)  # opset 18: ceil(7 / 3) = 3, 3, 1
    assert [p.shape[1] for p in parts] == [3, 3, 1]


def test_squeeze_unsqueeze_shape_gather_slice(rng):
    x = rnd(rng, 3, 1, 4)
    ax = np.array([0, -1], np.int64)
    assert run("Unsqueeze", [x, ax], const=(1,)).shape == (1, 3, 1, 4, 1)
    assert run("Squeeze", [x, np.array([1], np.int64)], const=(1,)).shape == (3, 4)
    assert run("Squeeze", [x]).shape == (3, 4)
    np.testing.assert_array_equal(run("Shape", [x]), [3, 1, 4])
    np.testing.assert_array_equal(run("Shape", [x], {"start": 1}), [1, 4])
    idx = np.array([[0, -1], [2, 1]], np.int64)
    close(run("Gather", [x, idx], {"axis": 2}), torch.from_numpy(x)[:, :, [[0, 3], [2, 1]]].numpy())
    y = rnd(rng, 6, 7, 8)
    cases = [([1, -2], [5, 100], None, None), ([5, 0], [-100, 9], [0, 2], [-2, 3]), ([-1], [-9], [-1], [-3])]
    for starts, ends, axes, steps in cases:
        args = [y, np.array(starts), np.array(ends)] + ([np.array(axes)] if axes else []) + (
            [np.array(steps)] if steps else [])
        got = run("Slice", args, const=tuple(range(1, len(args))))
        sl = [slice(None)] * 3
        for k, (s, e) in enumerate(zip(starts, ends)):
            a = axes[k] if axes else k
            st_ = steps[k] if steps else 1
            sl[a] = slice(s, e if not (st_ < 0 and e < -y.shape[a]) else None, st_)
        np.testing.assert_array_equal(got, y[tuple(sl)])
    with pytest.raises(GraphError, match="dim 0 of shape"):
        run("Squeeze", [x, np.array([0], np.int64)], const=(1,))


def test_reductions_attr_and_input_axes(rng):
    x = rnd(rng, 3, 4, 5)
    close(run("ReduceMean", [x], {"axes": [1, -1]}), x.mean(axis=(1, 2), keepdims=True))
    close(run("ReduceSum", [x, np.array([0], np.int64)], {"keepdims": 0}, const=(1,)), x.sum(0))
    close(run("ReduceMax", [x], {"keepdims": 0}), x.max())
    close(run("ReduceSum", [x], {"noop_with_empty_axes": 1}), x)


def test_dropout_constant_identity(rng):
    x = rnd(rng, 4, 3)
    y, mask = run("Dropout", [x, np.array(0.5, np.float32)], n_out=2, const=(1,))
    close(y, x)
    assert mask.dtype == bool and mask.all()
    v = rnd(rng, 2, 2)
    close(run("Constant", [], {"value": v}), v)
    assert run("Constant", [], {"value_ints": [1, 2]}).dtype == np.int64


def test_every_registered_op_has_doc_and_is_tested():
    """Every op says what it computes; the ops this file does not run are run by ONNX's node tests
    (tests/test_ir_onnx_node_tests.py, every standard op) and the pass tests (the infopt-domain ops)."""
    for name, op in OPS.items():
        assert op.doc, f"{name} lacks a doc"
    tested = set(UNARY) | set(BINARY) | {
        "Where", "Clip", "Cast", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
        "Softmax", "LayerNormalization", "MatMul", "Gemm", "Reshape", "Flatten", "Transpose", "Concat", "Split",
        "Squeeze", "Unsqueeze", "Shape", "Gather", "Slice", "ReduceMean", "ReduceSum", "ReduceMax", "Dropout",
        "Constant", "ReduceProd"}
    assert tested <= set(OPS)


def test_infer_node_accepts_explicit_consts():
    g = Graph()
    g.add_input("x", TensorType((2, 6)))
    g.add_input("s", TensorType((2,), "i64"))
    from infopt.ir import Node
    node = Node("Reshape", ["x", "s"], ["y"])
    assert infer_node(g, node, consts=[None, np.array([3, 4])])[0].shape == (3, 4)
