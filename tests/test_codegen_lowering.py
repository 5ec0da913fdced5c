"""Lowerings from graph nodes and compile_graph: every lowered op matches the interpreter on fresh random inputs."""
import numpy as np
import pytest

from infopt.codegen import compile_graph, fuse_elementwise_chain
from infopt.codegen.compiled import compile_kernel
from infopt.codegen.lower_elementwise import UnsupportedLoweringError
from infopt.ir import Graph, TensorType
from infopt.ir.interpreter import run_graph

rng = np.random.default_rng()


def _graph(inputs, nodes, consts=None):
    g = Graph("g")
    for name, shape in inputs.items():
        g.add_input(name, TensorType(shape, "f32"))
    for k, v in (consts or {}).items():
        g.add_initializer(k, v)
    last = None
    for op, ins, attrs in nodes:
        last = g.add_node(op, ins, attrs, outputs=[f"v{len(g.nodes)}"])
    g.outputs = [last.outputs[0]]
    return g


def _feeds(g, scale=1.0, positive=False):
    out = {}
    for i in g.inputs:
        a = rng.standard_normal(g.type_of(i).shape).astype(np.float32) * scale
        out[i] = np.abs(a) + 0.1 if positive else a
    return out


def _check(g, rtol=1e-5, atol=1e-5, **kw):
    feeds = _feeds(g, **kw)
    cg = compile_graph(g)
    assert not any(k.checked for k in cg.kernels), "every lowered kernel's accesses are proven in bounds (no run-time checks)"
    got = cg(feeds)
    ref = run_graph(g, feeds)
    for k in g.outputs:
        np.testing.assert_allclose(got[k], ref[k], rtol=rtol, atol=atol, err_msg=f"output {k}")


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_with_broadcasting(op):
    g = _graph({"a": (3, 4, 5), "b": (4, 1)}, [(op, ["a", "b"], {})])
    _check(g, positive=op == "Div")


@pytest.mark.parametrize("op", ["Relu", "Neg", "Sqrt", "Log", "Exp", "Sigmoid", "Tanh", "Identity"])
def test_unary(op):
    g = _graph({"x": (7, 33)}, [(op, ["x"], {})])
    _check(g, rtol=2e-6, atol=1e-6, positive=op in ("Sqrt", "Log"), scale=8.0 if op != "Log" else 1.0)


def test_exp_extremes_match_numpy():
    g = _graph({"x": (16,)}, [("Exp", ["x"], {})])
    x = np.array([-200, -87.5, -86.0, -10, -1e-3, 0, 1e-3, 1, 10, 80, 88.5, 88.8, 100, np.inf, -np.inf, np.nan], np.float32)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(compile_graph(g)({"x": x})[g.outputs[0]], np.exp(x), rtol=3e-7, atol=1e-37)


def test_clip_pow_gelu():
    g = _graph({"x": (50,)}, [("Clip", ["x", "lo", "hi"], {}), ("Pow", ["v0", "two"], {}),
                              ("Gelu", ["v1"], {"approximate": "tanh"})],
               {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32), "two": np.array(2.0, np.float32)})
    _check(g)


def test_chain_fused_into_one_kernel():
    g = _graph({"x": (1000,), "y": (1000,)}, [("Mul", ["x", "y"], {}), ("Add", ["v0", "x"], {}),
                                              ("Sigmoid", ["v1"], {}), ("Mul", ["v2", "v1"], {})])
    kern, ins, out = fuse_elementwise_chain(g, g.nodes)
    assert ins == ["x", "y"] and out == g.outputs[0]
    assert str(kern).count("for ") == 1
    feeds = _feeds(g)
    (got,) = compile_kernel(kern).run(feeds["x"], feeds["y"])
    np.testing.assert_allclose(got, run_graph(g, feeds)[out], rtol=1e-5, atol=1e-6)


def test_fused_elementwise_node_from_unit02():
    from infopt.passes.fusion import ElementwiseFusion

    g = _graph({"x": (4, 64), "b": (64,)}, [("Add", ["x", "b"], {}), ("Relu", ["v0"], {}), ("Mul", ["v1", "v1"], {})])
    ref_g = g.copy()
    ElementwiseFusion().apply(g)
    assert [n.op for n in g.nodes] == ["FusedElementwise"]
    feeds = _feeds(g)
    np.testing.assert_allclose(compile_graph(g)(feeds)[g.outputs[0]], run_graph(ref_g, feeds)[ref_g.outputs[0]], rtol=1e-6)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMean"])
@pytest.mark.parametrize("axes, keep", [([1], 1), ([0, 2], 0), ([-1], 0)])
def test_reductions(op, axes, keep):
    g = _graph({"x": (5, 6, 7)}, [(op, ["x"], {"axes": axes, "keepdims": keep})])
    _check(g, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis):
    g = _graph({"x": (6, 40, 3)}, [("Softmax", ["x"], {"axis": axis})])
    _check(g, rtol=1e-5, atol=1e-7, scale=5.0)


def test_matmul_batched_and_gemm():
    g = _graph({"a": (2, 1, 5, 7), "b": (3, 7, 4)}, [("MatMul", ["a", "b"], {})])
    _check(g, rtol=1e-4, atol=1e-5)
    g = _graph({"a": (7, 5), "b": (6, 7), "c": (6,)},
               [("Gemm", ["a", "b", "c"], {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0})])
    _check(g, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1], "strides": [2, 1]},
                                   {"dilations": [2, 2], "pads": [2, 0, 1, 2], "group": 2}])
def test_conv(attrs):
    g = _graph({"x": (2, 4, 9, 8), "w": (6, 4 // attrs.get("group", 1), 3, 3), "b": (6,)}, [("Conv", ["x", "w", "b"], attrs)])
    _check(g, rtol=1e-4, atol=1e-5)


def test_unsupported_op_names_node_and_fallback_runs():
    g = _graph({"x": (3, 4)}, [("Relu", ["x"], {}), ("Transpose", ["v0"], {"perm": [1, 0]}), ("Exp", ["v1"], {})])
    with pytest.raises(UnsupportedLoweringError, match="op Transpose has no kernel-IR lowering"):
        compile_graph(g)
    cg = compile_graph(g, fallback="numpy")
    assert [how for _, _, how in cg.plan] == ["llvm", "numpy", "llvm"]
    feeds = _feeds(g)
    np.testing.assert_allclose(cg(feeds)[g.outputs[0]], run_graph(g, feeds)[g.outputs[0]], rtol=1e-6)
