"""QuantizeLinear and DequantizeLinear (ONNX): per-tensor, per-axis and blocked scales, integer zero points.

``QuantizeLinear``: y = saturate(round(x / scale) + zero_point), rounding half to even, into the zero point's
dtype (else ``output_dtype``, else u8). ``DequantizeLinear``: y = (x - zero_point) * scale, in the scale's dtype
(else ``output_dtype``). A 1-D scale is per axis (``axis``, default 1); with ``block_size`` each scale covers
that many consecutive elements along ``axis``. The 8-bit float and 4-bit types are outside the IR's dtypes.
The pass that inserts them (calibration, InsertQDQ) is ``infopt.quant``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import FLOAT_DTYPES, ONNX_DTYPES, TensorType
from .common import norm_axis
from .registry import OpDef, register_op

QUANT_DTYPES = ("u8", "i8", "u16", "i16")
_Q_INPUTS = FLOAT_DTYPES + ("i32",)


def _out_dtype(op: str, attrs: dict[str, Any], default: str) -> str:
    code = int(attrs.get("output_dtype", 0))
    if not code:
        return default
    if code not in ONNX_DTYPES:
        raise GraphError(f"{op}: output_dtype {code} is not an IR dtype; use one of {sorted(ONNX_DTYPES)}")
    return ONNX_DTYPES[code]


def _check_scale(op: str, x: TensorType, scale: TensorType, zp: TensorType | None, attrs: dict[str, Any]) -> None:
    block = int(attrs.get("block_size", 0))
    if scale.rank == 0 or (scale.rank == 1 and scale.shape[0] == 1 and not block):
        pass  # per tensor
    elif block:
        axis = norm_axis(op, attrs.get("axis", 1), x.rank)
        want = -(-x.shape[axis] // block)
        if scale.rank != x.rank or scale.shape[axis] != want or any(
                s != d for k, (s, d) in enumerate(zip(scale.shape, x.shape)) if k != axis):
            raise GraphError(f"{op}: with block_size={block} on axis {axis}, the scale of input {x} must have shape "
                             f"{tuple(want if k == axis else d for k, d in enumerate(x.shape))}, got {scale.shape}")
    elif scale.rank == 1:
        axis = norm_axis(op, attrs.get("axis", 1), x.rank)
        if scale.shape[0] != x.shape[axis]:
            raise GraphError(f"{op}: a per-axis scale needs one value per element of axis {axis} of {x} "
                             f"({x.shape[axis]}), got {scale.shape[0]}")
    else:
        raise GraphError(f"{op}: the scale must be a scalar, 1-D (per axis) or, with block_size, of the input's rank; "
                         f"got {scale}")
    if zp is not None and zp.size != scale.size:
        raise GraphError(f"{op}: the zero point {zp} must have the scale's shape {scale.shape}")


def _broadcast(param: np.ndarray, x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Scale or zero point laid out against ``x`` (per tensor, per axis or blocked)."""
    p = np.asarray(param)
    if p.size == 1 and not int(attrs.get("block_size", 0)):
        return p.reshape(())
    axis = int(attrs.get("axis", 1)) % x.ndim
    block = int(attrs.get("block_size", 0))
    if block:
        return np.take(np.repeat(p, block, axis=axis), np.arange(x.shape[axis]), axis=axis)
    return p.reshape([-1 if k == axis else 1 for k in range(x.ndim)])


def _q_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x, scale, zp = (list(types) + [None])[:3]
    if x.dtype not in _Q_INPUTS:
        raise GraphError(f"QuantizeLinear: x must be one of {_Q_INPUTS}, got {x.dtype}")
    dtype = zp.dtype if zp is not None else _out_dtype("QuantizeLinear", attrs, "u8")
    if dtype not in QUANT_DTYPES:
        raise GraphError(f"QuantizeLinear: the quantized dtype must be one of {QUANT_DTYPES}, got {dtype}")
    _check_scale("QuantizeLinear", x, scale, zp, attrs)
    return [TensorType(x.shape, dtype, x.layout)]


def _q(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = xs[0], xs[1]
    zp = xs[2] if len(xs) > 2 and xs[2] is not None else None
    out = TensorType((), zp.dtype if zp is not None else _out_dtype("QuantizeLinear", attrs, "u8")).numpy_dtype
    info = np.iinfo(out)
    s = _broadcast(scale, x, attrs).astype(np.float32)
    q = np.rint(x.astype(np.float32) / s)  # ONNX rounds half to even, as np.rint does
    if zp is not None:
        q = q + _broadcast(zp, x, attrs).astype(np.float64)
    return [np.clip(q, info.min, info.max).astype(out)]


def _dq_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x, scale, zp = (list(types) + [None])[:3]
    if x.dtype not in QUANT_DTYPES + ("i32",):
        raise GraphError(f"DequantizeLinear: x must be one of {QUANT_DTYPES + ('i32',)}, got {x.dtype}")
    if zp is not None and zp.dtype != x.dtype:
        raise GraphError(f"DequantizeLinear: the zero point is {zp.dtype} but x is {x.dtype}; they must match")
    if scale.dtype not in FLOAT_DTYPES:
        raise GraphError(f"DequantizeLinear: the scale must be a float, got {scale.dtype}")
    _check_scale("DequantizeLinear", x, scale, zp, attrs)
    return [TensorType(x.shape, _out_dtype("DequantizeLinear", attrs, scale.dtype), x.layout)]


def _dq(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = xs[0], xs[1]
    zp = xs[2] if len(xs) > 2 and xs[2] is not None else None
    out = _out_dtype("DequantizeLinear", attrs, TensorType.of(scale).dtype)
    v = x.astype(np.float32)
    if zp is not None:
        v = v - _broadcast(zp, x, attrs).astype(np.float32)
    return [(v * _broadcast(scale, x, attrs).astype(np.float32)).astype(TensorType((), out).numpy_dtype)]


register_op(OpDef("QuantizeLinear", _q_infer, _q, (2, 3),
                  doc="y = saturate(round(x / scale) + zero_point); per tensor, per axis or blocked"))
register_op(OpDef("DequantizeLinear", _dq_infer, _dq, (2, 3),
                  doc="y = (x - zero_point) * scale; per tensor, per axis or blocked"))
