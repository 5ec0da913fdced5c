"""Softmax and LayerNormalization (the normalizations of a transformer block)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from .common import FLOATS, broadcast_shapes, norm_axis
from .registry import OpDef, register_op


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x - max) / sum exp(x - max) along ``axis`` (stable)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def _softmax_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x = types[0]
    if x.dtype not in FLOATS:
        raise GraphError(f"Softmax: needs a floating-point input, got {x.dtype}")
    norm_axis("Softmax", attrs.get("axis", -1), max(x.rank, 1))
    return [x]


register_op(OpDef("Softmax", _softmax_infer, lambda xs, a: [softmax(xs[0], int(a.get("axis", -1)))], (1, 1),
                  doc="softmax along one axis (default -1, opset 13 semantics)"))


def _ln_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x, scale = types[0], types[1]
    b = types[2] if len(types) > 2 else None
    if x.dtype not in FLOATS:
        raise GraphError(f"LayerNormalization: needs a floating-point input, got {x.dtype}")
    axis = norm_axis("LayerNormalization", attrs.get("axis", -1), x.rank)
    normalized = x.shape[axis:]
    for what, t in (("Scale", scale), ("B", b)):
        if t is not None and broadcast_shapes("LayerNormalization", t.shape, normalized) != normalized:
            raise GraphError(f"LayerNormalization: {what} of shape {t.shape} does not broadcast to the "
                             f"normalized dims {normalized} (axis={axis} of input {x})")
    stat = TensorType(x.shape[:axis] + (1,) * (x.rank - axis), "f32" if int(attrs.get("stash_type", 1)) == 1
                      else x.dtype)
    return [x, stat, stat]


def _ln(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = xs[0], xs[1]
    b = xs[2] if len(xs) > 2 else None
    axis = norm_axis("LayerNormalization", attrs.get("axis", -1), x.ndim)
    axes = tuple(range(axis, x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(((x64 - mean) ** 2).mean(axis=axes, keepdims=True) + float(attrs.get("epsilon", 1e-5)))
    y = (x64 - mean) * inv * scale
    if b is not None:
        y = y + b
    sd = np.float32 if int(attrs.get("stash_type", 1)) == 1 else x.dtype
    return [y.astype(x.dtype), mean.astype(sd), inv.astype(sd)]


register_op(OpDef("LayerNormalization", _ln_infer, _ln, (2, 3), num_outputs=(1, 3),
                  doc="(x - mean) / sqrt(var + epsilon) * Scale + B over the dims from 'axis' on"))
