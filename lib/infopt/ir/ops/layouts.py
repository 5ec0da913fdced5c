"""Ops on non-NCHW layouts that the layout passes create: ConvNHWC (channels last) and the NCHWc (blocked) ops.

An NCHWc tensor stores [N, C/B, H, W, B]: the channels of one pixel come in blocks of B, contiguous. As
onnxruntime does, its logical shape stays 4-D, [N, C padded to B, H, W]: the array holds the blocked memory
order under that shape. Conv weights for NchwcConv are reordered once, ahead of time: [O/B, I/B, kh, kw, Bi, Bo]
("OIHWBiBo"), or [O/B, I, kh, kw, Bo] when the convolution reads a plain NCHW input. The reference computes
unblock, compute and reblock, so the interpreter runs rewritten graphs. ``infopt.passes.layout`` and
``infopt.passes.nchwc`` create these nodes and say how to export them.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from .fused import fused_conv, fused_conv_infer
from .registry import INFOPT_DOMAIN, OpDef, get_op, register_op

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]
NCHWC_ONLY_ATTRS = ("block", "nchw_input")  # attributes our NCHWc ops add to the plain op's


# ----- ConvNHWC --------------------------------------------------------------------------------------
def nchw_type(t: TensorType | None) -> TensorType | None:
    """The NCHW type of a 4-D NHWC value (None stays None)."""
    return None if t is None or t.rank != 4 else TensorType(tuple(t.shape[k] for k in TO_NCHW), t.dtype, "NCHW")


def _conv_nhwc_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x = types[0]
    if x is None or x.rank != 4:
        raise GraphError(f"ConvNHWC: needs a 4-D NHWC input, got {x}")
    ts = [nchw_type(x), *types[1:3]] + ([nchw_type(types[3])] if len(types) > 3 else [])
    (y,) = fused_conv_infer(ts, attrs)
    return [TensorType(tuple(y.shape[k] for k in TO_NHWC), y.dtype, "NHWC")]


def _conv_nhwc(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    args = [xs[0].transpose(TO_NCHW), *xs[1:3]]
    if len(xs) > 3:
        args.append(None if xs[3] is None else xs[3].transpose(TO_NCHW))
    (y,) = fused_conv(args, attrs)
    return [np.ascontiguousarray(y.transpose(TO_NHWC))]


register_op(OpDef(
    "ConvNHWC", _conv_nhwc_infer, _conv_nhwc, (2, 4), domain=INFOPT_DOMAIN,
    doc="FusedConv on channels-last tensors: X and Z are NHWC, W stays OIHW (infopt.passes.layout).",
))


# ----- NCHWc -----------------------------------------------------------------------------------------
def block_nchw(x: np.ndarray, b: int) -> np.ndarray:
    """NCHW -> NCHWc (memory [N, C/B, H, W, B], shape [N, Cpad, H, W]), zero-padding C to a multiple of B."""
    n, c, h, w = x.shape
    cp = -(-c // b) * b
    if cp != c:
        x = np.concatenate([x, np.zeros((n, cp - c, h, w), x.dtype)], axis=1)
    return np.ascontiguousarray(x.reshape(n, cp // b, b, h, w).transpose(0, 1, 3, 4, 2)).reshape(n, cp, h, w)


def unblock(x: np.ndarray, b: int, channels: int | None = None) -> np.ndarray:
    """NCHWc -> NCHW, dropping padded channels beyond ``channels``."""
    n, cp, h, w = x.shape
    y = x.reshape(n, cp // b, h, w, b).transpose(0, 1, 4, 2, 3).reshape(n, cp, h, w)
    return np.ascontiguousarray(y[:, :channels] if channels is not None else y)


def reorder_weights(w: np.ndarray, b: int, nchw_input: bool) -> np.ndarray:
    """OIHW conv weights in onnxruntime's NCHWc order (OIHWBiBo, or OIHWBo for an NCHW input), same shape."""
    o, i, kh, kw = w.shape
    if o % b:
        raise ValueError(f"output channels {o} are not a multiple of the block size {b}")
    if nchw_input:
        return np.ascontiguousarray(w.reshape(o // b, b, i, kh, kw).transpose(0, 2, 3, 4, 1)).reshape(w.shape)
    if i % b:
        raise ValueError(f"input channels {i} are not a multiple of the block size {b}")
    r = w.reshape(o // b, b, i // b, b, kh, kw).transpose(0, 2, 4, 5, 3, 1)  # [O/B, I/B, kh, kw, Bi, Bo]
    return np.ascontiguousarray(r).reshape(w.shape)


def unreorder_weights(w: np.ndarray, b: int, nchw_input: bool) -> np.ndarray:
    """The inverse of reorder_weights: back to OIHW."""
    o, i, kh, kw = w.shape
    if nchw_input:
        return np.ascontiguousarray(w.reshape(o // b, i, kh, kw, b).transpose(0, 4, 1, 2, 3)).reshape(w.shape)
    r = w.reshape(o // b, i // b, kh, kw, b, b).transpose(0, 5, 1, 4, 2, 3)
    return np.ascontiguousarray(r).reshape(w.shape)


def blocked_type(t: TensorType, b: int) -> TensorType:
    """The NCHWc type of an NCHW value for block size ``b`` (channels padded up to a multiple of b)."""
    n, c, h, w = t.shape
    return TensorType((n, -(-c // b) * b, h, w), t.dtype, "NCHWc")


def _plain(t: TensorType) -> TensorType:
    """The type a blocked tensor has to the plain op that computes on it (same padded shape, NCHW tag)."""
    return TensorType(t.shape, t.dtype, "NCHW") if t.layout == "NCHWc" else t


def _plain_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if k not in NCHWC_ONLY_ATTRS}


def _conv_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    b = int(attrs["block"])
    x = types[0] if attrs.get("nchw_input") else _plain(types[0])
    z = [_plain(types[3])] if len(types) > 3 and types[3] is not None else []
    (y,) = fused_conv_infer([x, *types[1:3], *z], _plain_attrs(attrs))
    return [blocked_type(y, b)]


def _conv(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    b, nchw_input = int(attrs["block"]), bool(attrs.get("nchw_input"))
    x = xs[0] if nchw_input else unblock(xs[0], b)
    w = unreorder_weights(xs[1], b, nchw_input)
    z = [unblock(xs[3], b)] if len(xs) > 3 and xs[3] is not None else []
    (y,) = fused_conv([x, w, xs[2] if len(xs) > 2 else None, *z], _plain_attrs(attrs))
    return [block_nchw(y, b)]


def _pool(op: str):
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        (y,) = get_op(op).infer([_plain(types[0])], _plain_attrs(attrs))[:1]
        return [blocked_type(y, int(attrs["block"]))]

    def compute(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        b = int(attrs["block"])
        y = get_op(op).compute([unblock(xs[0], b)], _plain_attrs(attrs))[0]
        return [block_nchw(y, b)]

    return infer, compute


def _reorder_output_type(ts: Sequence[TensorType | None], a: dict[str, Any]) -> list[TensorType]:
    return [TensorType((ts[0].shape[0], int(a["channels"]), *ts[0].shape[2:4]), ts[0].dtype, "NCHW")]


register_op(OpDef("ReorderInput", lambda ts, a: [blocked_type(ts[0], int(a["block"]))],
                  lambda xs, a: [block_nchw(xs[0], int(a["block"]))], (1, 1), domain=INFOPT_DOMAIN,
                  doc="NCHW -> NCHWc (infopt.passes.nchwc)"))
register_op(OpDef("ReorderOutput", _reorder_output_type,
                  lambda xs, a: [unblock(xs[0], int(a["block"]), int(a["channels"]))], (1, 1), domain=INFOPT_DOMAIN,
                  doc="NCHWc -> NCHW (infopt.passes.nchwc)"))
register_op(OpDef("NchwcConv", _conv_infer, _conv, (2, 4), domain=INFOPT_DOMAIN,
                  doc="FusedConv on NCHWc tensors, reordered weights"))
register_op(OpDef("NchwcMaxPool", *_pool("MaxPool"), (1, 1), domain=INFOPT_DOMAIN, doc="MaxPool on NCHWc tensors"))
register_op(OpDef("NchwcGlobalAveragePool", *_pool("GlobalAveragePool"), (1, 1), domain=INFOPT_DOMAIN,
                  doc="GlobalAveragePool on NCHWc tensors"))
