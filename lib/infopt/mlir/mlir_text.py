"""Pieces of MLIR's textual syntax: tensor types, affine maps, dense constants, floats.

Small pure functions the emitter and the notebook share, so a type or a map is spelled one way everywhere.
"""
from __future__ import annotations

import numpy as np

from ..ir.types import DTYPES

ELEMENT_TYPES = {"f32": "f32", "f64": "f64", "i64": "i64", "i32": "i32", "i8": "i8", "bool": "i1"}
INLINE_LIMIT = 16   # constants with more elements are written as hex bytes, dense<"0x...">


def element_type(dtype: str) -> str:
    """The MLIR element type of an infopt dtype name ('f32' -> 'f32', 'bool' -> 'i1')."""
    if dtype not in ELEMENT_TYPES:
        raise ValueError(f"dtype {dtype!r} has no MLIR element type here; supported: {sorted(ELEMENT_TYPES)}")
    return ELEMENT_TYPES[dtype]


def shaped(kind: str, shape: tuple[int, ...], elem: str) -> str:
    """`tensor<2x3xf32>` / `memref<2x3xf32>`; a 0-d shape gives `tensor<f32>`."""
    dims = "".join(f"{d}x" for d in shape)
    return f"{kind}<{dims}{elem}>"


def tensor_type(shape: tuple[int, ...], dtype: str = "f32") -> str:
    """The ranked tensor type of a static shape and an infopt dtype name."""
    return shaped("tensor", tuple(shape), element_type(dtype))


def affine_map(n_dims: int, results: list[str]) -> str:
    """`affine_map<(d0, d1) -> (d1, 0)>` from the number of loop dims and result expressions."""
    dims = ", ".join(f"d{i}" for i in range(n_dims))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


def float_literal(value: float, elem: str = "f32") -> str:
    """A float constant MLIR parses exactly: hex bits for inf/nan, else a decimal that round-trips."""
    v = float(value)
    if np.isfinite(v):
        return repr(float(np.float32(v))) if elem == "f32" else repr(v)
    bits = np.array([v], dtype=np.float32 if elem == "f32" else np.float64).view(
        np.uint32 if elem == "f32" else np.uint64)[0]
    return f"0x{int(bits):0{8 if elem == 'f32' else 16}X}"


def dense_literal(value: np.ndarray, dtype: str) -> str:
    """The `dense<...>` attribute of an array: values inline when small, little-endian hex bytes when large."""
    arr = np.ascontiguousarray(value, dtype=DTYPES[dtype])
    elem = element_type(dtype)
    if arr.size > INLINE_LIMIT:
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        return f'dense<"0x{data.hex().upper()}">'
    flat = arr.reshape(-1)
    if elem.startswith("f"):
        items = [float_literal(v, elem) for v in flat]
    elif elem == "i1":
        items = ["true" if v else "false" for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    if arr.ndim == 0 or len(set(items)) == 1:
        return f"dense<{items[0]}>" if items else "dense<[]>"
    return f"dense<{_nest(items, arr.shape)}>"


def _nest(items: list[str], shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(items) + "]"
    step = len(items) // shape[0]
    return "[" + ", ".join(_nest(items[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"
