"""Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd (axes as attribute or input, keepdims).

ReduceSum takes its axes as an input from opset 13, the others from opset 18 (before: the ``axes`` attribute);
the IR reads both forms and ``export`` writes the one the target opset has. ``noop_with_empty_axes`` (the
others' since 18) makes "no axes" mean "reduce nothing" instead of "reduce all". Reducing an empty set gives
the identity: 0 for sums, 1 for products, -inf / +inf (the dtype's extremes for integers) for max / min,
NaN for the mean.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GraphError
from ..node import Node
from ..protocols import GraphLike
from ..types import TensorType, is_float
from .common import constant_node, ints, need_const, norm_axis
from .infer import constant_value
from .registry import OpDef, register_op

AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18, "ReduceProd": 18}


def reduce_axes(op: str, rank: int, attrs: dict[str, Any], axes_value: Any) -> tuple[int, ...]:
    """The reduced axes: from input 1 or attribute 'axes'; none given means all (or none, if noop_with_empty_axes)."""
    axes = ints(axes_value) if axes_value is not None else ints(attrs["axes"]) if "axes" in attrs else []
    if not axes:
        return () if int(attrs.get("noop_with_empty_axes", 0)) else tuple(range(rank))
    out = tuple(sorted(norm_axis(op, a, rank) for a in axes))
    if len(set(out)) != len(out):
        raise GraphError(f"{op}: repeated axis in {axes}")
    return out


def _identity(name: str, dtype: np.dtype) -> Any:
    if name in ("ReduceMax", "ReduceMin"):
        hi = np.inf if is_float(dtype) else np.iinfo(dtype).max if dtype.kind in "iu" else True
        lo = -np.inf if is_float(dtype) else np.iinfo(dtype).min if dtype.kind in "iu" else False
        return lo if name == "ReduceMax" else hi
    return {"ReduceSum": 0, "ReduceProd": 1, "ReduceMean": np.nan}[name]


def _export_axes(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """Axes as the input (opsets that have it) or as the attribute (older ones); noop_with_empty_axes only where
    it exists."""
    since = AXES_INPUT_SINCE[node.op]
    has_input = len(node.inputs) > 1 and bool(node.inputs[1])
    attrs = dict(node.attrs)
    if opset >= since and "axes" in attrs:
        name, const = constant_node(graph, np.array(ints(attrs.pop("axes")), np.int64), f"{node.name}_axes")
        return [const, Node(node.op, [node.inputs[0], name], list(node.outputs), attrs, node.name)]
    if opset < since:
        noop = int(attrs.pop("noop_with_empty_axes", 0))
        axes = None
        if has_input:
            v = constant_value(graph, node.inputs[1])
            if v is None:
                raise GraphError(f"node {node.label}: {node.op} at opset {opset} takes its axes as an attribute, but "
                                 f"input %{node.inputs[1]} is not a constant; export at opset >= {since}")
            axes = ints(v)
        if noop and not (axes or attrs.get("axes")):
            return [Node("Identity", node.inputs[:1], list(node.outputs), {}, node.name)]
        if axes is not None:
            attrs["axes"] = axes
        return [Node(node.op, node.inputs[:1], list(node.outputs), attrs, node.name)]
    return [node]


def _reduce(name: str, fn: Callable[..., np.ndarray]) -> None:
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
        if len(types) > 1 and types[1] is not None:
            need_const(name, consts, 1, "axes")
        x = types[0]
        axes = reduce_axes(name, x.rank, attrs, consts[1] if len(consts) > 1 else None)
        keep = int(attrs.get("keepdims", 1))
        if name == "ReduceMean" and not is_float(x.dtype) and any(x.shape[a] == 0 for a in axes):
            raise GraphError(f"{name}: the mean of an empty set is NaN, which {x.dtype} cannot hold")
        shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape) if keep or k not in axes)
        return [TensorType(shape, x.dtype, x.layout if keep else None)]

    def compute(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = xs[0]
        axes = reduce_axes(name, x.ndim, attrs, xs[1] if len(xs) > 1 else None)
        keep = bool(int(attrs.get("keepdims", 1)))
        if not axes:
            return [x]
        if any(x.shape[a] == 0 for a in axes):
            shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape) if keep or k not in axes)
            return [np.full(shape, _identity(name, x.dtype), dtype=x.dtype)]
        acc = np.float64 if is_float(x.dtype) and name not in ("ReduceMax", "ReduceMin") else None
        src = x.astype(np.float32) if x.dtype.name == "bfloat16" and acc is None else x
        out = fn(src, axis=axes, keepdims=keep, dtype=acc) if acc else fn(src, axis=axes, keepdims=keep)
        return [np.asarray(out).astype(x.dtype, copy=False)]

    register_op(OpDef(name, infer, compute, (1, 2), const_inputs=(1,), export=_export_axes,
                      doc=f"{fn.__name__} over 'axes' (attribute or constant input), keepdims"))


_reduce("ReduceMean", np.mean)
_reduce("ReduceSum", np.sum)
_reduce("ReduceMax", np.max)
_reduce("ReduceMin", np.min)
_reduce("ReduceProd", np.prod)
