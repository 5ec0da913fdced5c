"""The dtypes beyond f32/i64: int16, uint16/32/64, float16 (computing in float16) and bfloat16 (ml_dtypes), through
ops, import, export, the text form and the interpreter."""
from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from infopt.ir import DTYPES, ONNX_CODES, Graph, TensorType, dtype_name
from infopt.ir.interpreter import run_graph
from infopt.ir.onnx_io import from_onnx, to_onnx
from infopt.ir.text import parse_text, to_text
from infopt.ir.verify import graph_diff

NEW = ("i16", "u16", "u32", "u64", "f16", "bf16")


def arrays(dtype: str, rng, shape=(3, 4), positive=False):
    nd = TensorType((), dtype).numpy_dtype
    if dtype in ("f16", "bf16"):
        v = rng.standard_normal(shape) * 3
        return (np.abs(v) + 0.5 if positive else v).astype(nd)
    info = np.iinfo(nd)
    lo = 1 if positive or info.min == 0 else -1000
    return rng.integers(lo, min(info.max, 1000), shape).astype(nd)


def test_dtype_table_and_names():
    for d in NEW:
        assert d in DTYPES and dtype_name(DTYPES[d]) == d and d in ONNX_CODES
    assert DTYPES["bf16"] == np.dtype(ml_dtypes.bfloat16)
    assert TensorType((2,), "bf16").nbytes == 4


def test_importing_the_ir_does_not_load_ml_dtypes():
    out = subprocess.run([sys.executable, "-c", "import sys, infopt.ir; print('ml_dtypes' in sys.modules)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("dtype", NEW)
def test_arithmetic_keeps_the_dtype(dtype):
    rng = np.random.default_rng(1)
    a, b = arrays(dtype, rng), arrays(dtype, rng, positive=True)
    g = Graph(f"arith_{dtype}")
    x, y = g.add_input("a", TensorType(a.shape, dtype)), g.add_input("b", TensorType(b.shape, dtype))
    outs = {op: g.add_node(op, [x, y]).outputs[0] for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less")}
    g.outputs = list(outs.values())
    got = run_graph(g, {"a": a, "b": b})
    for op, name in outs.items():
        v = got[name]
        assert v.dtype == (np.dtype(bool) if op in ("Equal", "Less") else a.dtype), f"{op} {dtype}: {v.dtype}"
    if dtype in ("f16", "bf16"):
        ref = a.astype(np.float32) * b.astype(np.float32)
        np.testing.assert_allclose(got[outs["Mul"]].astype(np.float32), ref, rtol=2**-7 if dtype == "bf16" else 1e-3)
    else:
        wrap = TensorType((), dtype).numpy_dtype
        np.testing.assert_array_equal(got[outs["Mul"]], (a * b).astype(wrap))
        q = np.trunc(a.astype(np.float64) / b.astype(np.float64)).astype(wrap)
        np.testing.assert_array_equal(got[outs["Div"]], q)
    assert not graph_diff(from_onnx(to_onnx(g)), g)
    back = parse_text(to_text(g, max_inline=10**6))
    assert not graph_diff(back, g)


def test_uint64_division_is_exact_above_2_to_the_53():
    g = Graph("u64")
    x = g.add_input("a", TensorType((3,), "u64"))
    y = g.add_input("b", TensorType((3,), "u64"))
    g.outputs = g.add_node("Div", [x, y]).outputs
    a = np.array([2**63 + 7, 2**60 + 1, 18446744073709551615], np.uint64)
    b = np.array([3, 7, 5], np.uint64)
    np.testing.assert_array_equal(run_graph(g, {"a": a, "b": b})[g.outputs[0]], a // b)


def test_signed_integer_division_truncates_toward_zero():
    g = Graph("i16")
    x = g.add_input("a", TensorType((4,), "i16"))
    y = g.add_input("b", TensorType((4,), "i16"))
    g.outputs = g.add_node("Div", [x, y]).outputs
    got = run_graph(g, {"a": np.array([-7, 7, -7, 7], np.int16), "b": np.array([2, -2, -2, 2], np.int16)})
    np.testing.assert_array_equal(got[g.outputs[0]], [-3, -3, 3, 3])


@pytest.mark.parametrize("dtype", ["i16", "u16", "u32", "u64", "f16"])
def test_imported_models_of_the_new_dtypes_match_onnxruntime(dtype):
    """Add -> Mul -> Max written in ONNX for the dtype; onnxruntime (where it has kernels) agrees exactly."""
    rng = np.random.default_rng(2)
    code = ONNX_CODES[dtype]
    a, b = arrays(dtype, rng), arrays(dtype, rng)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["p"]),
             helper.make_node("Max", ["p", "a"], ["y"])]
    vi = lambda n: helper.make_tensor_value_info(n, code, [3, 4])  # noqa: E731
    m = helper.make_model(helper.make_graph(nodes, "m", [vi("a"), vi("b")], [vi("y")]),
                          opset_imports=[helper.make_opsetid("", 18)])
    g = from_onnx(m)
    got = run_graph(g, {"a": a, "b": b})["y"]
    assert got.dtype == a.dtype
    try:
        ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"a": a, "b": b})[0]
    except Exception as e:  # onnxruntime registers no kernel for some of these dtypes
        if "NOT_IMPLEMENTED" not in str(e) and "Could not find an implementation" not in str(e):
            raise
        ref = np.maximum((a + b) * b, a)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=1e-3 if dtype == "f16" else 0)


def test_bfloat16_through_matmul_cast_and_export():
    rng = np.random.default_rng(3)
    g = Graph("bf")
    x = g.add_input("x", TensorType((2, 3), "f32"))
    w = g.add_initializer("w", rng.standard_normal((3, 4)).astype(ml_dtypes.bfloat16))
    xb = g.add_node("Cast", [x], {"to": 16}).outputs[0]
    h = g.add_node("MatMul", [xb, w]).outputs[0]
    r = g.add_node("Relu", [h]).outputs[0]
    g.outputs = [g.add_node("Cast", [r], {"to": 1}).outputs[0]]
    xv = rng.standard_normal((2, 3)).astype(np.float32)
    got = run_graph(g, {"x": xv})[g.outputs[0]]
    ref = np.maximum(xv.astype(ml_dtypes.bfloat16).astype(np.float32) @ g.initializers["w"].astype(np.float32), 0)
    np.testing.assert_allclose(got, ref, rtol=2**-6, atol=1e-2)
    m = to_onnx(g)
    onnx.checker.check_model(m, full_check=True)
    assert m.graph.initializer[0].data_type == onnx.TensorProto.BFLOAT16
    assert not graph_diff(from_onnx(m), g)


def test_float16_reductions_and_softmax_stay_float16():
    g = Graph("h")
    x = g.add_input("x", TensorType((4, 8), "f16"))
    s = g.add_node("Softmax", [x], {"axis": -1}).outputs[0]
    m = g.add_node("ReduceMean", [s], {"axes": [1], "keepdims": 0}).outputs[0]
    g.outputs = [m]
    xv = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float16)
    got = run_graph(g, {"x": xv})[m]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), np.full(4, 1 / 8), rtol=1e-3)
