"""Elementwise ops: unary math, broadcasting binary arithmetic and comparison, Where, Clip, Cast."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..graph import GraphError
from ..types import TensorType
from ._util import FLOATS, ONNX_DTYPES, broadcast_shapes, layout_like, same_dtype
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


def _unary_infer(name: str, float_only: bool) -> Callable[[Sequence[TensorType | None], dict], list[TensorType]]:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        t = types[0]
        if float_only and t.dtype not in FLOATS:
            raise GraphError(f"{name}: needs a floating-point input, got {t.dtype}; insert a Cast")
        return [t]
    return infer


def _unary(name: str, fn: Callable[..., np.ndarray], float_only: bool = True, doc: str = "") -> None:
    def compute(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = xs[0]
        return [np.asarray(fn(x, attrs)).astype(x.dtype, copy=False)]
    register_op(OpDef(name, _unary_infer(name, float_only), compute, (1, 1), elementwise=True, doc=doc))


_unary("Relu", lambda x, a: np.maximum(x, np.zeros((), x.dtype)), False, "max(x, 0)")
_unary("Neg", lambda x, a: -x, False, "-x")
_unary("Sqrt", lambda x, a: np.sqrt(x), doc="sqrt(x)")
_unary("Exp", lambda x, a: np.exp(x), doc="e^x")
_unary("Log", lambda x, a: np.log(x), doc="ln x")
_unary("Tanh", lambda x, a: np.tanh(x), doc="tanh x")
_unary("Sigmoid", lambda x, a: _sigmoid(x), doc="1 / (1 + e^-x)")
_unary("Erf", lambda x, a: erf(x), doc="erf x")
_unary("Gelu", lambda x, a: gelu(x, a.get("approximate", "none")), doc="x * Phi(x) (approximate='none'|'tanh')")


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], commutative: bool = False,
            out_dtype: str | None = None, doc: str = "") -> None:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        dt = same_dtype(name, types)
        shape = broadcast_shapes(name, *(t.shape for t in types))
        return [TensorType(shape, out_dtype or dt, layout_like(shape, types))]

    def compute(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
        a, b = xs
        out = np.asarray(fn(a, b))
        return [out if out_dtype else out.astype(a.dtype, copy=False)]

    register_op(OpDef(name, infer, compute, (2, 2), commutative=commutative, elementwise=True, doc=doc))


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integer division truncates toward zero, as ONNX says."""
    if a.dtype.kind in "iu":
        return np.trunc(np.true_divide(a, b)).astype(a.dtype)
    return a / b


_binary("Add", np.add, True, doc="a + b (broadcasting)")
_binary("Sub", np.subtract, doc="a - b (broadcasting)")
_binary("Mul", np.multiply, True, doc="a * b (broadcasting)")
_binary("Div", _div, doc="a / b (broadcasting; integers truncate)")
_binary("Equal", np.equal, True, out_dtype="bool", doc="a == b (broadcasting), bool")


def _pow_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    shape = broadcast_shapes("Pow", types[0].shape, types[1].shape)
    return [TensorType(shape, types[0].dtype, layout_like(shape, types[:1]))]


def _pow(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    a, b = xs
    return [np.power(a, b.astype(a.dtype, copy=False)).astype(a.dtype, copy=False)]


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
        return [np.broadcast_to(out, np.broadcast_shapes(*(x.shape for x in xs))).copy()]

    register_op(OpDef(name, infer, compute, (1, 1 << 30), commutative=True, elementwise=True,
                      doc=f"elementwise {name.lower()} of all inputs (broadcasting)"))


_variadic("Max", np.maximum)
_variadic("Min", np.minimum)


def _where_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    if types[0].dtype != "bool":
        raise GraphError(f"Where: the condition must be bool, got {types[0].dtype}")
    dt = same_dtype("Where", types[1:])
    shape = broadcast_shapes("Where", *(t.shape for t in types))
    return [TensorType(shape, dt, layout_like(shape, types[1:]))]


register_op(OpDef(
    "Where", _where_infer, lambda xs, a: [np.where(xs[0], xs[1], xs[2])], (3, 3), elementwise=True,
    doc="cond ? x : y (broadcasting)"))


def _clip_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    for k, t in enumerate(types[1:], 1):
        if t is not None and (t.shape != () or t.dtype != types[0].dtype):
            raise GraphError(f"Clip: input {k} ({'min' if k == 1 else 'max'}) must be a scalar of dtype "
                             f"{types[0].dtype}, got {t}")
    return [types[0]]


def _clip(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = xs[0]
    lo = xs[1] if len(xs) > 1 and xs[1] is not None else attrs.get("min")
    hi = xs[2] if len(xs) > 2 and xs[2] is not None else attrs.get("max")
    out = x
    if lo is not None:
        out = np.maximum(out, np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        out = np.minimum(out, np.asarray(hi, dtype=x.dtype))
    return [np.array(out, dtype=x.dtype)]


register_op(OpDef("Clip", _clip_infer, _clip, (1, 3), elementwise=True,
                  doc="min(max(x, min), max); bounds as optional scalar inputs (or attrs, before opset 11)"))


def _cast_to(attrs: dict[str, Any]) -> str:
    to = attrs.get("to")
    if isinstance(to, bool) or not isinstance(to, (int, np.integer)) or int(to) not in ONNX_DTYPES:
        raise GraphError(
            f"Cast: attribute 'to' must be an ONNX TensorProto dtype code, one of "
            f"{ {k: v for k, v in ONNX_DTYPES.items()} }, got {to!r}"
        )
    return ONNX_DTYPES[int(to)]


def _cast_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    return [TensorType(types[0].shape, _cast_to(attrs), types[0].layout)]


def _cast(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [xs[0].astype(TensorType((), _cast_to(attrs)).numpy_dtype)]


register_op(OpDef("Cast", _cast_infer, _cast, (1, 1), elementwise=True,
                  doc="convert to the dtype given by 'to' (ONNX TensorProto code: 1=f32, 7=i64, 9=bool...)"))
