"""Matrix products: MatMul (numpy semantics, batched with broadcasting) and Gemm."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from .common import broadcast_shapes, same_dtype
from .registry import OpDef, register_op


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``a @ b`` under numpy rules, or a GraphError naming the inner dims that disagree."""
    a, b = tuple(a), tuple(b)
    if not a or not b:
        raise GraphError(f"MatMul: inputs must have rank >= 1, got shapes {a} and {b}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise GraphError(
            f"MatMul: inner dimensions disagree: a has K={a2[-1]} (shape {a}) but b has K={b2[-2]} (shape {b})"
        )
    batch = broadcast_shapes("MatMul (batch dims)", a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    dt = same_dtype("MatMul", types)
    return [TensorType(matmul_shape(types[0].shape, types[1].shape), dt)]


def _matmul(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    a, b = xs[0], xs[1]
    if a.dtype.name == "bfloat16":  # numpy's matmul would return f32 for bf16; ONNX keeps bf16
        return [np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)]
    return [np.matmul(a, b)]


register_op(OpDef("MatMul", _matmul_infer, _matmul, (2, 2),
                  doc="a @ b with numpy's batching and broadcasting rules"))


def _gemm_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = types[0], types[1]
    c = types[2] if len(types) > 2 else None
    dt = same_dtype("Gemm", [a, b, c])
    if a.rank != 2 or b.rank != 2:
        raise GraphError(f"Gemm: A and B must be matrices, got {a} and {b}")
    m, ka = a.shape[::-1] if attrs.get("transA", 0) else a.shape
    kb, n = b.shape[::-1] if attrs.get("transB", 0) else b.shape
    if ka != kb:
        raise GraphError(
            f"Gemm: inner dimensions disagree: A gives K={ka} (shape {a.shape}, transA={attrs.get('transA', 0)}) "
            f"but B gives K={kb} (shape {b.shape}, transB={attrs.get('transB', 0)})"
        )
    if c is not None and broadcast_shapes("Gemm (C)", c.shape, (m, n)) != (m, n):
        raise GraphError(f"Gemm: C of shape {c.shape} does not broadcast to the output shape {(m, n)}")
    return [TensorType((m, n), dt)]


def _gemm(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    a, b = xs[0], xs[1]
    c = xs[2] if len(xs) > 2 else None
    a = a.T if attrs.get("transA", 0) else a
    b = b.T if attrs.get("transB", 0) else b
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    y = a @ b
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None:
        y = y + (c if beta == 1.0 else c * np.asarray(beta, c.dtype))
    return [np.ascontiguousarray(np.asarray(y).astype(a.dtype, copy=False))]


register_op(OpDef("Gemm", _gemm_infer, _gemm, (2, 3),
                  doc="alpha * op(A) @ op(B) + beta * C; op transposes when transA / transB"))
