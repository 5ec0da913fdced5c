"""Helpers the op definitions share: broadcasting, axis normalisation, ONNX dtype codes, layout propagation."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..graph import GraphError
from ..types import TensorType

# ONNX TensorProto.DataType codes <-> the IR's short dtype names (the subset the IR supports).
ONNX_DTYPES: dict[int, str] = {1: "f32", 2: "u8", 3: "i8", 6: "i32", 7: "i64", 9: "bool", 10: "f16", 11: "f64"}
ONNX_CODES: dict[str, int] = {v: k for k, v in ONNX_DTYPES.items()}
FLOATS = ("f16", "f32", "f64")


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
