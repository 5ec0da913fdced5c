"""Elementwise ops: unary math and activations, broadcasting binary arithmetic and comparison, variadic
Max/Min/Sum, Where, Clip, Cast and CastLike.

Results keep the input dtype (f16 computes to f16, integers wrap as numpy and ONNX do); float math that numpy
would promote (bf16 through ml_dtypes, mixed scalars) is cast back. Gelu (opset 20), HardSwish (14) and
CastLike (15) export as their ONNX decompositions at older opsets.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GraphError
from ..node import Node
from ..protocols import GraphLike
from ..types import FLOAT_DTYPES, INT_DTYPES, ONNX_CODES, ONNX_DTYPES, SIGNED_DTYPES, TensorType, onnx_dtype
from .common import as_dtype, broadcast_shapes, constant_node, layout_like, same_dtype
from .registry import OpDef, register_op

_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfc_abs(a: np.ndarray) -> np.ndarray:
    """erfc(a) for a >= 0 with fractional error < 1.2e-7 (the Chebyshev fit of Numerical Recipes' erfcc)."""
    t = 1.0 / (1.0 + 0.5 * a)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    return t * np.exp(-a * a + poly)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, to float32 accuracy (Taylor series near 0, erfc beyond)."""
    x64 = np.asarray(x, dtype=np.float64)
    # |x| < 0.5: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)); 12 terms reach double precision.
    x2 = x64 * x64
    term = x64.copy()
    small = term.copy()
    for n in range(1, 12):
        term = term * (-x2) / n
        small = small + term / (2 * n + 1)
    small *= _SQRT_PI
    big = np.sign(x64) * (1.0 - _erfc_abs(np.abs(x64)))
    return np.where(np.abs(x64) < 0.5, small, big).astype(np.result_type(x), copy=False)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU: x * Phi(x), exact (erf) or the tanh approximation, accurate in relative terms for x << 0 too."""
    x64 = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        y = 0.5 * x64 * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)))
    elif approximate == "none":
        z = x64 / math.sqrt(2.0)
        one_plus_erf = np.where(z < -0.5, _erfc_abs(np.abs(z)), 1.0 + erf(z))  # no cancellation for z << 0
        y = 0.5 * x64 * one_plus_erf
    else:
        raise GraphError(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return y.astype(np.result_type(x), copy=False)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) without overflow warnings for large |x|."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def hard_sigmoid(x: np.ndarray, alpha: float = 0.2, beta: float = 0.5) -> np.ndarray:
    """max(0, min(1, alpha * x + beta)), in x's dtype."""
    return as_dtype(np.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1), x)


def _unary_infer(name: str, dtypes: Sequence[str]) -> Callable[[Sequence[TensorType | None], dict], list[TensorType]]:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        t = types[0]
        if t.dtype not in dtypes:
            kind = "a floating-point input" if tuple(dtypes) == FLOAT_DTYPES else "an input of dtype"
            raise GraphError(f"{name}: needs {kind} ({', '.join(dtypes)}), got {t.dtype}; insert a Cast")
        return [t]
    return infer


def _unary(name: str, fn: Callable[..., np.ndarray], dtypes: Sequence[str] = FLOAT_DTYPES, doc: str = "",
           export: Any = None) -> None:
    def compute(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = xs[0]
        return [as_dtype(fn(x, attrs), x)]
    register_op(OpDef(name, _unary_infer(name, dtypes), compute, (1, 1), elementwise=True, doc=doc, export=export))


def _export_gelu(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """Gelu exists from opset 20; before it, the formula ONNX's function body gives."""
    if opset >= 20:
        return [node]
    x, y = node.inputs[0], node.outputs[0]
    dt = graph.type_of(x).numpy_dtype
    fresh = lambda hint: graph.fresh_name(f"{node.name}_{hint}")  # noqa: E731
    if node.attrs.get("approximate", "none") == "tanh":
        c_a, n_a = constant_node(graph, np.array(0.044715, dt), f"{node.name}_a")
        c_s, n_s = constant_node(graph, np.array(math.sqrt(2.0 / math.pi), dt), f"{node.name}_s")
        c_h, n_h = constant_node(graph, np.array(0.5, dt), f"{node.name}_half")
        c_1, n_1 = constant_node(graph, np.array(1.0, dt), f"{node.name}_one")
        x3, t1, t2, t3, th, p1, hx = (fresh(k) for k in ("x3", "ax3", "inner", "scaled", "tanh", "p1", "hx"))
        c_3, n_3 = constant_node(graph, np.array(3.0, dt), f"{node.name}_three")
        return [n_a, n_s, n_h, n_1, n_3,
                Node("Pow", [x, c_3], [x3], {}, fresh("pow")), Node("Mul", [x3, c_a], [t1], {}, fresh("mul_a")),
                Node("Add", [x, t1], [t2], {}, fresh("add_x")), Node("Mul", [t2, c_s], [t3], {}, fresh("mul_s")),
                Node("Tanh", [t3], [th], {}, fresh("tanh_op")), Node("Add", [th, c_1], [p1], {}, fresh("add_1")),
                Node("Mul", [x, c_h], [hx], {}, fresh("mul_h")), Node("Mul", [hx, p1], [y], {}, fresh("mul_y"))]
    c_r, n_r = constant_node(graph, np.array(math.sqrt(2.0), dt), f"{node.name}_sqrt2")
    c_h, n_h = constant_node(graph, np.array(0.5, dt), f"{node.name}_half")
    c_1, n_1 = constant_node(graph, np.array(1.0, dt), f"{node.name}_one")
    d, e, p1, hx = (fresh(k) for k in ("div", "erf", "p1", "hx"))
    return [n_r, n_h, n_1,
            Node("Div", [x, c_r], [d], {}, fresh("div_op")), Node("Erf", [d], [e], {}, fresh("erf_op")),
            Node("Add", [e, c_1], [p1], {}, fresh("add_1")), Node("Mul", [x, c_h], [hx], {}, fresh("mul_h")),
            Node("Mul", [hx, p1], [y], {}, fresh("mul_y"))]


def _export_hardswish(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """HardSwish exists from opset 14; before it, x * HardSigmoid(x, alpha=1/6, beta=0.5)."""
    if opset >= 14:
        return [node]
    h = graph.fresh_name(f"{node.name}_hsig")
    return [Node("HardSigmoid", [node.inputs[0]], [h], {"alpha": 1.0 / 6.0, "beta": 0.5}, graph.fresh_name("HardSigmoid")),
            Node("Mul", [node.inputs[0], h], list(node.outputs), {}, graph.fresh_name("Mul"))]


SIGNED_NUMERIC = FLOAT_DTYPES + SIGNED_DTYPES
NUMERIC = FLOAT_DTYPES + INT_DTYPES

_unary("Relu", lambda x, a: np.maximum(x, np.zeros((), x.dtype)), SIGNED_NUMERIC, "max(x, 0)")
_unary("Neg", lambda x, a: -x, SIGNED_NUMERIC, "-x")
_unary("Abs", lambda x, a: np.abs(x), NUMERIC, "|x|")
_unary("Sqrt", lambda x, a: np.sqrt(x), doc="sqrt(x)")
_unary("Exp", lambda x, a: np.exp(x), doc="e^x")
_unary("Log", lambda x, a: np.log(x), doc="ln x")
_unary("Tanh", lambda x, a: np.tanh(x), doc="tanh x")
_unary("Sigmoid", lambda x, a: _sigmoid(x), doc="1 / (1 + e^-x)")
_unary("Erf", lambda x, a: erf(x), doc="erf x")
_unary("Reciprocal", lambda x, a: np.reciprocal(x), doc="1 / x")
_unary("HardSigmoid", lambda x, a: hard_sigmoid(x, float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))),
       doc="max(0, min(1, alpha * x + beta)) (alpha=0.2, beta=0.5)")
_unary("HardSwish", lambda x, a: x * hard_sigmoid(x, 1.0 / 6.0, 0.5), doc="x * max(0, min(1, x / 6 + 1/2))",
       export=_export_hardswish)
_unary("Gelu", lambda x, a: gelu(x, a.get("approximate", "none")), doc="x * Phi(x) (approximate='none'|'tanh')",
       export=_export_gelu)


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], commutative: bool = False,
            out_dtype: str | None = None, doc: str = "") -> None:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        dt = same_dtype(name, types)
        shape = broadcast_shapes(name, *(t.shape for t in types))
        return [TensorType(shape, out_dtype or dt, layout_like(shape, types))]

    def compute(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        a, b = xs
        out = np.asarray(fn(a, b))
        return [out if out_dtype else as_dtype(out, a)]

    register_op(OpDef(name, infer, compute, (2, 2), commutative=commutative, elementwise=True, doc=doc))


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integer division truncates toward zero, as ONNX says (exactly, also for 64-bit values)."""
    if a.dtype.kind in "iu":
        q = np.floor_divide(a, b)
        if a.dtype.kind == "i":  # floor -> trunc where the exact quotient is a negative non-integer
            q = np.where((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q)
        return q.astype(a.dtype)
    return a / b


_binary("Add", np.add, True, doc="a + b (broadcasting)")
_binary("Sub", np.subtract, doc="a - b (broadcasting)")
_binary("Mul", np.multiply, True, doc="a * b (broadcasting)")
_binary("Div", _div, doc="a / b (broadcasting; integers truncate)")
_binary("Equal", np.equal, True, out_dtype="bool", doc="a == b (broadcasting), bool")


def _mod_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    dt = same_dtype("Mod", types)
    shape = broadcast_shapes("Mod", *(t.shape for t in types))
    return [TensorType(shape, dt, layout_like(shape, types))]


def _mod(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    a, b = xs
    fn = np.fmod if int(attrs.get("fmod", 0)) else np.mod  # fmod: sign of a (C); mod: sign of b (Python)
    return [as_dtype(fn(a, b), a)]


register_op(OpDef("Mod", _mod_infer, _mod, (2, 2), elementwise=True,
                  doc="a mod b (broadcasting): sign of b, or of a with fmod=1 (C fmod)"))
_binary("Less", np.less, out_dtype="bool", doc="a < b (broadcasting), bool")


def _pow_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    shape = broadcast_shapes("Pow", types[0].shape, types[1].shape)
    return [TensorType(shape, types[0].dtype, layout_like(shape, types[:1]))]


def _pow(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    a, b = xs
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return [np.power(a, b.astype(a.dtype, copy=False))]
    return [as_dtype(np.power(a, b) if a.dtype == b.dtype else np.power(a.astype(np.float64), b.astype(np.float64)), a)]


register_op(OpDef("Pow", _pow_infer, _pow, (2, 2), elementwise=True, doc="a ** b (broadcasting; type of a)"))


def _variadic(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        dt = same_dtype(name, types)
        shape = broadcast_shapes(name, *(t.shape for t in types))
        return [TensorType(shape, dt, layout_like(shape, types))]

    def compute(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return [as_dtype(np.broadcast_to(out, np.broadcast_shapes(*(x.shape for x in xs))).copy(), xs[0])]

    register_op(OpDef(name, infer, compute, (1, 1 << 30), commutative=True, elementwise=True,
                      doc=f"elementwise {name.lower()} of all inputs (broadcasting)"))


_variadic("Max", np.maximum)
_variadic("Min", np.minimum)
_variadic("Sum", np.add)


def _where_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    if types[0].dtype != "bool":
        raise GraphError(f"Where: the condition must be bool, got {types[0].dtype}")
    dt = same_dtype("Where", types[1:])
    shape = broadcast_shapes("Where", *(t.shape for t in types))
    return [TensorType(shape, dt, layout_like(shape, types[1:]))]


register_op(OpDef(
    "Where", _where_infer, lambda xs, a: [as_dtype(np.where(xs[0], xs[1], xs[2]), xs[1])], (3, 3), elementwise=True,
    doc="cond ? x : y (broadcasting)"))


def _clip_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    for k, t in enumerate(types[1:], 1):
        if t is not None and (t.size != 1 or t.dtype != types[0].dtype):
            raise GraphError(f"Clip: input {k} ({'min' if k == 1 else 'max'}) must be a scalar of dtype "
                             f"{types[0].dtype}, got {t}")
    return [types[0]]


def _clip(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = xs[0]
    lo = xs[1] if len(xs) > 1 and xs[1] is not None else attrs.get("min")
    hi = xs[2] if len(xs) > 2 and xs[2] is not None else attrs.get("max")
    out = x
    if lo is not None:
        out = np.maximum(out, np.asarray(lo, dtype=x.dtype).reshape(()))
    if hi is not None:
        out = np.minimum(out, np.asarray(hi, dtype=x.dtype).reshape(()))
    return [np.array(out, dtype=x.dtype)]


register_op(OpDef("Clip", _clip_infer, _clip, (1, 3), elementwise=True,
                  doc="min(max(x, min), max); bounds as optional scalar inputs (or attrs, before opset 11)"))


def _cast_to(attrs: dict[str, Any], op: str = "Cast") -> str:
    to = attrs.get("to")
    if isinstance(to, bool) or not isinstance(to, (int, np.integer)):
        raise GraphError(f"{op}: attribute 'to' must be an ONNX TensorProto dtype code, one of "
                         f"{dict(ONNX_DTYPES)}, got {to!r}")
    return onnx_dtype(int(to), f"{op} to={int(to)}")


def _cast_array(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` converted to ``dtype`` as ONNX Cast does (floats to bool by != 0; saturate matters only for float8)."""
    return x.astype(TensorType((), dtype).numpy_dtype)


def _cast_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    return [TensorType(types[0].shape, _cast_to(attrs), types[0].layout)]


register_op(OpDef("Cast", _cast_infer, lambda xs, a: [_cast_array(xs[0], _cast_to(a))], (1, 1), elementwise=True,
                  doc="convert to the dtype given by 'to' (ONNX TensorProto code: 1=f32, 7=i64, 9=bool...)"))


def _export_castlike(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """CastLike exists from opset 15; before it, a Cast to the target's dtype."""
    if opset >= 15:
        return [node]
    to = ONNX_CODES[graph.type_of(node.inputs[1]).dtype]
    return [Node("Cast", node.inputs[:1], list(node.outputs), {"to": to}, node.name)]


register_op(OpDef(
    "CastLike", lambda ts, a: [TensorType(ts[0].shape, ts[1].dtype, ts[0].layout)],
    lambda xs, a: [_cast_array(xs[0], TensorType.of(xs[1]).dtype)], (2, 2), export=_export_castlike,
    doc="convert input 0 to the dtype of input 1 (a Cast whose target comes from a value)"))
