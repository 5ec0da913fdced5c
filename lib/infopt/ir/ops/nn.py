"""Convolution, pooling and batch normalization (ONNX NCHW semantics, any number of spatial dims).

f16 and bf16 convolutions accumulate in f32 and round the result to their dtype, as onnxruntime's kernels do.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from ..types import is_float
from .common import FLOATS, ints, same_dtype
from .registry import OpDef, register_op


def window_params(op: str, x: TensorType, kernel: Sequence[int], attrs: dict[str, Any]) -> dict[str, list[int]]:
    """Strides, dilations, begin/end pads and output sizes of a sliding-window op, checked against ``x``."""
    nd = len(kernel)
    spatial = list(x.shape[2:])
    if len(spatial) != nd:
        raise GraphError(f"{op}: kernel has {nd} spatial dims {tuple(kernel)} but input {x} has {len(spatial)}")
    strides = ints(attrs.get("strides", [1] * nd))
    dil = ints(attrs.get("dilations", [1] * nd))
    for name, v in (("strides", strides), ("dilations", dil)):
        if len(v) != nd or min(v) < 1:
            raise GraphError(f"{op}: {name} must be {nd} positive ints, got {v}")
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    auto = attrs.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    if auto == "NOTSET":
        pads = ints(attrs.get("pads", [0] * (2 * nd)))
        if len(pads) != 2 * nd or min(pads) < 0:
            raise GraphError(f"{op}: pads must be {2 * nd} non-negative ints [begins..., ends...], got {pads}")
        begin, end = pads[:nd], pads[nd:]
    elif auto == "VALID":
        begin, end = [0] * nd, [0] * nd
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i, s, e in zip(spatial, strides, eff):
            total = max(0, (math.ceil(i / s) - 1) * s + e - i)
            small = total // 2
            begin.append(small if auto == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
    else:
        raise GraphError(f"{op}: auto_pad {auto!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    ceil_mode = bool(attrs.get("ceil_mode", 0))
    out = []
    for ax, (i, b, en, s, e) in enumerate(zip(spatial, begin, end, strides, eff)):
        span = i + b + en - e
        if span < 0:
            raise GraphError(
                f"{op}: spatial dim {ax} (size {i}, padded to {i + b + en}) is smaller than the "
                f"{'dilated ' if e != kernel[ax] else ''}kernel extent {e}"
            )
        o = (math.ceil(span / s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= i + b:  # the last window would start in the end padding
            o -= 1
        out.append(o)
    return {"strides": strides, "dilations": dil, "begin": begin, "end": end, "out": out, "eff": eff}


def _pad(x: np.ndarray, p: dict[str, list[int]], fill: float) -> np.ndarray:
    """The input padded with ``fill``: the declared pads, plus what ceil_mode needs past the end."""
    pad_end = [
        max(en, (o - 1) * s + e - (i + b))
        for i, b, en, o, s, e in zip(x.shape[2:], p["begin"], p["end"], p["out"], p["strides"], p["eff"])
    ]
    if any(p["begin"]) or any(pad_end):
        x = np.pad(x, [(0, 0), (0, 0)] + list(zip(p["begin"], pad_end)), constant_values=fill)
    return x


def _taps(xp: np.ndarray, p: dict[str, list[int]], kernel: Sequence[int]):
    """For each kernel offset, the strided view of the padded input that this tap reads: (N, C, *out)."""
    for off in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                    for o, d, n, s in zip(off, p["dilations"], p["out"], p["strides"]))
        yield off, xp[(slice(None), slice(None)) + idx]


# ----- Conv ------------------------------------------------------------------------------------
def _conv_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x, w = types[0], types[1]
    b = types[2] if len(types) > 2 else None
    same_dtype("Conv", [x, w, b])
    if x.dtype not in FLOATS:
        raise GraphError(f"Conv: needs floating-point inputs, got {x.dtype}")
    if x.rank < 3 or w.rank != x.rank:
        raise GraphError(f"Conv: input {x} and weight {w} must both be (N, C, spatial...) / (M, C/group, k...) "
                         "of the same rank >= 3")
    group = int(attrs.get("group", 1))
    if group < 1 or x.shape[1] % group or w.shape[0] % group:
        raise GraphError(f"Conv: group={group} must divide the input channels {x.shape[1]} and the output "
                         f"channels {w.shape[0]} (weight shape {w.shape})")
    if x.shape[1] != w.shape[1] * group:
        raise GraphError(
            f"Conv: input has {x.shape[1]} channels but weight expects {w.shape[1] * group} "
            f"(weight shape {w.shape}{f', group={group}' if group != 1 else ''})"
        )
    kernel = ints(attrs.get("kernel_shape", w.shape[2:]))
    if tuple(kernel) != tuple(w.shape[2:]):
        raise GraphError(f"Conv: kernel_shape {kernel} disagrees with the weight's spatial dims {w.shape[2:]}")
    if b is not None and b.shape != (w.shape[0],):
        raise GraphError(f"Conv: bias shape {b.shape} must be ({w.shape[0]},), one per output channel")
    p = window_params("Conv", x, kernel, attrs)
    return [TensorType((x.shape[0], w.shape[0], *p["out"]), x.dtype, x.layout)]


def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **attrs: Any) -> np.ndarray:
    """ONNX Conv by im2col + one batched matmul per group: y[n,m] = sum_c,k w[m,c,k] * x[n,c,window+k] + b[m]."""
    _conv_infer([TensorType.of(x), TensorType.of(w), None if b is None else TensorType.of(b)], attrs)  # checks
    g = int(attrs.get("group", 1))
    kernel = w.shape[2:]
    p = window_params("Conv", TensorType.of(x), kernel, attrs)
    (n, c), m, out = x.shape[:2], w.shape[0], p["out"]
    dtype = x.dtype
    if dtype.itemsize < 4:  # f16 / bf16: accumulate in f32
        x, w, b = x.astype(np.float32), w.astype(np.float32), None if b is None else b.astype(np.float32)
    cols = np.empty((n, c, *kernel, *out), dtype=x.dtype)  # im2col: one strided copy per kernel tap
    for off, tap in _taps(_pad(x, p, 0.0), p, kernel):
        cols[(slice(None), slice(None)) + off] = tap
    cols = cols.reshape(n, g, -1, math.prod(out))  # (N, G, Cg*K, P)
    y = np.matmul(w.reshape(g, m // g, -1), cols).reshape(n, m, *out)  # (G, Mg, Cg*K) @ -> (N, G, Mg, P)
    if b is not None:
        y += b.reshape((1, m) + (1,) * len(out))
    return y.astype(dtype, copy=False)


register_op(OpDef(
    "Conv", _conv_infer, lambda xs, a: [conv(xs[0], xs[1], xs[2] if len(xs) > 2 else None, **a)], (2, 3),
    doc="N-d convolution (NCHW): group, strides, pads, dilations, auto_pad"))


# ----- pooling ------------------------------------------------------------------------------
def _pool_infer(op: str):
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        x = types[0]
        if "kernel_shape" not in attrs:
            raise GraphError(f"{op}: attribute kernel_shape is required")
        if x.rank < 3:
            raise GraphError(f"{op}: input must be (N, C, spatial...), got {x}")
        if op == "AveragePool" and x.dtype not in FLOATS:
            raise GraphError(f"AveragePool: needs a floating-point input, got {x.dtype}")
        p = window_params(op, x, ints(attrs["kernel_shape"]), attrs)
        y = TensorType((*x.shape[:2], *p["out"]), x.dtype, x.layout)
        return [y, TensorType(y.shape, "i64")] if op == "MaxPool" else [y]
    return infer


def _maxpool(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    """Max over windows, and the flattened index of each max in the input (the first one on ties; storage_order
    1 numbers the spatial dims column-major), as ONNX's second output Indices."""
    x = xs[0]
    kernel = ints(attrs["kernel_shape"])
    p = window_params("MaxPool", TensorType.of(x), kernel, attrs)
    fill = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
    spatial = x.shape[2:]
    order = "F" if int(attrs.get("storage_order", 0)) else "C"
    base = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * len(spatial))
    starts = [np.arange(o) * s - b for o, s, b in zip(p["out"], p["strides"], p["begin"])]
    out, idx = None, None
    for off, tap in _taps(_pad(x, p, fill), p, kernel):
        coords = np.meshgrid(*[st + k * d for st, k, d in zip(starts, off, p["dilations"])], indexing="ij")
        inside = np.logical_and.reduce([(c >= 0) & (c < n) for c, n in zip(coords, spatial)])
        flat = np.ravel_multi_index([np.clip(c, 0, n - 1) for c, n in zip(coords, spatial)], spatial, order=order)
        here = base * math.prod(spatial) + flat
        if out is None:
            out, idx = tap.copy(), np.where(inside, here, -1)
            continue
        better = (tap > out) & inside
        out = np.where(better, tap, out)
        idx = np.where(better, here, idx)
    return [out.astype(x.dtype, copy=False), idx]


def _avgpool(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = xs[0]
    kernel = ints(attrs["kernel_shape"])
    p = window_params("AveragePool", TensorType.of(x), kernel, attrs)
    total = np.zeros((*x.shape[:2], *p["out"]))
    for _, tap in _taps(_pad(x, p, 0.0), p, kernel):
        total += tap
    # Divisor: cells of the real input, plus the declared pads when count_include_pad (never the
    # extra cells ceil_mode adds past the end).
    nd = len(kernel)
    ones = np.ones((1, 1, *x.shape[2:]))
    if attrs.get("count_include_pad", 0):
        ones = np.pad(ones, [(0, 0), (0, 0)] + list(zip(p["begin"], p["end"])), constant_values=1.0)
        p = dict(p, begin=[0] * nd, end=[0] * nd)
    count = sum(tap for _, tap in _taps(_pad(ones, p, 0.0), p, kernel))
    return [(total / count).astype(x.dtype)]


register_op(OpDef("MaxPool", _pool_infer("MaxPool"), _maxpool, (1, 1), num_outputs=(1, 2),
                  doc="max over sliding windows: kernel_shape, strides, pads, dilations, ceil_mode"))
register_op(OpDef("AveragePool", _pool_infer("AveragePool"), _avgpool, (1, 1),
                  doc="mean over sliding windows: kernel_shape, strides, pads, ceil_mode, count_include_pad"))


def _gap_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x = types[0]
    if x.rank < 3:
        raise GraphError(f"GlobalAveragePool: input must be (N, C, spatial...), got {x}")
    return [TensorType((*x.shape[:2], *(1,) * (x.rank - 2)), x.dtype, x.layout)]


register_op(OpDef(
    "GlobalAveragePool", _gap_infer,
    lambda xs, a: [xs[0].mean(axis=tuple(range(2, xs[0].ndim)), keepdims=True, dtype=np.float64).astype(xs[0].dtype)],
    (1, 1), doc="mean over all spatial dims, kept as size 1"))


# ----- BatchNormalization (inference) -------------------------------------------------------
BN_TRAINING = ("BatchNormalization: training_mode=1 is not supported: the infopt IR runs inference only (it "
               "normalizes with the stored mean and variance). Export the model in eval mode")


def _bn_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x = types[0]
    if int(attrs.get("training_mode", 0)):
        raise GraphError(BN_TRAINING)
    if x.dtype not in FLOATS:
        raise GraphError(f"BatchNormalization: needs a floating-point input, got {x.dtype}")
    if x.rank < 2:
        raise GraphError(f"BatchNormalization: input must be (N, C, ...), got {x}")
    for k, what in enumerate(("scale", "B", "input_mean", "input_var"), 1):
        if types[k].shape != (x.shape[1],):
            raise GraphError(f"BatchNormalization: {what} has shape {types[k].shape}, expected ({x.shape[1]},) "
                             f"(one per channel of input {x})")
    return [x]


def _bn(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale, bias, mean, var = xs
    eps = float(attrs.get("epsilon", 1e-5))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mul = (scale / np.sqrt(var + np.asarray(eps, var.dtype))).astype(x.dtype)
    add = (bias - mean * mul).astype(x.dtype)
    return [x * mul.reshape(shape) + add.reshape(shape)]


register_op(OpDef("BatchNormalization", _bn_infer, _bn, (5, 5), num_outputs=(1, 3),
                  doc="(x - mean) / sqrt(var + epsilon) * scale + B, per channel (inference)"))
