"""Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceProd (axes as attribute or constant input, keepdims)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..graph import GraphError
from ..types import TensorType
from ._util import ints, need_const, norm_axis
from .registry import OpDef, register_op


def reduce_axes(op: str, rank: int, attrs: dict[str, Any], axes_value: Any) -> tuple[int, ...]:
    """The reduced axes: from input 1 or attribute 'axes'; none given means all (or none, if noop_with_empty_axes)."""
    axes = ints(axes_value) if axes_value is not None else ints(attrs["axes"]) if "axes" in attrs else []
    if not axes:
        return () if int(attrs.get("noop_with_empty_axes", 0)) else tuple(range(rank))
    out = tuple(sorted(norm_axis(op, a, rank) for a in axes))
    if len(set(out)) != len(out):
        raise GraphError(f"{op}: repeated axis in {axes}")
    return out


def _reduce(name: str, fn: Callable[..., np.ndarray]) -> None:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
        if len(types) > 1 and types[1] is not None:
            need_const(name, consts, 1, "axes")
        x = types[0]
        axes = reduce_axes(name, x.rank, attrs, consts[1] if len(consts) > 1 else None)
        keep = int(attrs.get("keepdims", 1))
        if name == "ReduceMax" and any(x.shape[a] == 0 for a in axes):
            raise GraphError(f"{name}: cannot reduce an empty dim of {x}")
        shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape) if keep or k not in axes)
        return [TensorType(shape, x.dtype, x.layout if keep else None)]

    def compute(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = xs[0]
        axes = reduce_axes(name, x.ndim, attrs, xs[1] if len(xs) > 1 else None)
        keep = bool(int(attrs.get("keepdims", 1)))
        if not axes:
            return [x]
        acc = np.float64 if x.dtype.kind == "f" and name != "ReduceMax" else None
        out = fn(x, axis=axes, keepdims=keep, dtype=acc) if acc else fn(x, axis=axes, keepdims=keep)
        return [np.asarray(out).astype(x.dtype, copy=False)]

    register_op(OpDef(name, infer, compute, (1, 2), const_inputs=(1,),
                      doc=f"{fn.__name__} over 'axes' (attribute or constant input), keepdims"))


_reduce("ReduceMean", np.mean)
_reduce("ReduceSum", np.sum)
_reduce("ReduceMax", np.max)
_reduce("ReduceProd", np.prod)
