"""Helpers the op definitions share: broadcasting, axis normalisation, dtype checks, layout propagation."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..node import Node
from ..protocols import GraphLike
from ..types import FLOAT_DTYPES, TensorType

FLOATS = FLOAT_DTYPES


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """The numpy-broadcast shape of ``shapes``, or a GraphError naming the dimension that disagrees."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        big = dims - {1}
        if len(big) > 1:
            raise GraphError(
                f"{op}: shapes {' and '.join(str(tuple(s)) for s in shapes)} do not broadcast: "
                f"dimension {k - rank} is {sorted(big)} (sizes must be equal or 1)"
            )
        out.append(big.pop() if big else 1)
    return tuple(out)


def norm_axis(op: str, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` made non-negative for a tensor of ``rank``, or a GraphError naming the bad axis."""
    a = int(axis)
    if not -rank <= a < rank:
        raise GraphError(f"{op}: {what} {a} is out of range for a rank-{rank} input (use -{rank}..{rank - 1})")
    return a + rank if a < 0 else a


def same_dtype(op: str, types: Sequence[TensorType | None]) -> str:
    """The common dtype of the given (present) inputs, or a GraphError naming the mismatch."""
    present = [t for t in types if t is not None]
    dts = {t.dtype for t in present}
    if len(dts) > 1:
        raise GraphError(f"{op}: input dtypes differ ({', '.join(t.dtype for t in present)}); insert a Cast")
    return present[0].dtype


def layout_like(shape: tuple[int, ...], types: Sequence[TensorType | None]) -> str | None:
    """The layout tag of the first input that has the output's shape (elementwise ops keep layouts)."""
    for t in types:
        if t is not None and t.layout and t.shape == tuple(shape):
            return t.layout
    return None


def ints(v: Any) -> list[int]:
    """An attribute or constant input as a list of Python ints."""
    return [int(x) for x in np.asarray(v).reshape(-1)]


def need_const(op: str, consts: Sequence[np.ndarray | None], k: int, what: str) -> np.ndarray:
    """The value of constant input ``k`` or a GraphError saying it must be constant."""
    v = consts[k] if k < len(consts) else None
    if v is None:
        raise GraphError(
            f"{op}: input {k} ({what}) must be a constant (initializer or Constant node) so the output "
            "shape is known before running; fold it first"
        )
    return np.asarray(v)


def need_float(op: str, t: TensorType, what: str = "input") -> None:
    """A GraphError unless ``t`` is a floating-point type (f16, bf16, f32, f64)."""
    if t.dtype not in FLOATS:
        raise GraphError(f"{op}: needs a floating-point {what} ({', '.join(FLOATS)}), got {t.dtype}; insert a Cast")


def as_dtype(x: Any, like: np.ndarray) -> np.ndarray:
    """``x`` as an array of ``like``'s dtype (numpy promotes some bf16 and mixed results; ONNX keeps the dtype)."""
    return np.asarray(x).astype(like.dtype, copy=False)


def constant_node(graph: GraphLike, value: np.ndarray, hint: str) -> tuple[str, Node]:
    """A Constant node holding ``value`` with a fresh output name (export hooks use it): (name, node)."""
    name = graph.fresh_name(hint)
    return name, Node("Constant", [], [name], {"value": np.asarray(value)}, graph.fresh_name("Constant"))
