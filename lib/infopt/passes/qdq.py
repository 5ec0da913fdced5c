"""Quantization as a graph pass (a preview; unit 12 does it fully): calibrate value ranges by running the
graph, then insert QuantizeLinear/DequantizeLinear pairs so chosen values pass through int8/uint8."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..ir.graph import Graph, GraphError, Node
from ..ir.ops import OPS, OpDef, register_op
from ..ir.types import TensorType
from .base import Pass

_QRANGE = {"u8": (0, 255, np.uint8), "i8": (-128, 127, np.int8)}


def _q_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x, _, zp = (list(types) + [None])[:3]
    dtype = zp.dtype if zp is not None else "u8"
    if dtype not in _QRANGE:
        raise GraphError(f"QuantizeLinear: zero point must be u8 or i8, got {dtype}")
    return [TensorType(x.shape, dtype, x.layout)]


def _q(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = xs[0], xs[1]
    zp = xs[2] if len(xs) > 2 and xs[2] is not None else np.uint8(0)
    lo, hi, dt = _QRANGE["u8" if np.asarray(zp).dtype == np.uint8 else "i8"]
    q = np.rint(x / scale) + zp.astype(np.int32)  # ONNX rounds half to even, as np.rint does
    return [np.clip(q, lo, hi).astype(dt)]


def _dq_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    return [TensorType(types[0].shape, types[1].dtype, types[0].layout)]


def _dq(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = xs[0], xs[1]
    zp = xs[2] if len(xs) > 2 and xs[2] is not None else np.zeros((), x.dtype)
    return [((x.astype(np.int32) - zp.astype(np.int32)) * scale).astype(scale.dtype)]


if "QuantizeLinear" not in OPS:  # per-tensor only (scalar scale and zero point), ONNX semantics
    register_op(OpDef("QuantizeLinear", _q_infer, _q, (2, 3),
                      doc="y = saturate(round(x / scale) + zero_point), per tensor"))
if "DequantizeLinear" not in OPS:
    register_op(OpDef("DequantizeLinear", _dq_infer, _dq, (2, 3), doc="y = (x - zero_point) * scale, per tensor"))


def quant_targets(graph: Graph, ops: Iterable[str] = ("Conv", "FusedConv", "Gemm", "MatMul")) -> list[str]:
    """The activation values read (as first input) by the given compute-heavy ops: what a quantizer would quantize."""
    ops = set(ops)
    return list(dict.fromkeys(n.inputs[0] for n in graph.nodes if n.op in ops and n.inputs[0] not in graph.initializers))


def calibrate_minmax(graph: Graph, batches: Iterable[Mapping[str, np.ndarray]],
                     values: Sequence[str] | None = None) -> dict[str, tuple[float, float]]:
    """Observed (min, max) of ``values`` (default: quant_targets) over calibration inputs, via the interpreter."""
    from ..ir.interpreter import run_graph

    values = list(quant_targets(graph) if values is None else values)
    probe = graph.copy()
    probe.outputs = list(dict.fromkeys(list(graph.outputs) + values))
    ranges: dict[str, tuple[float, float]] = {}
    for feeds in batches:
        out = run_graph(probe, feeds)
        for v in values:
            lo, hi = float(out[v].min()), float(out[v].max())
            old = ranges.get(v, (lo, hi))
            ranges[v] = (min(old[0], lo), max(old[1], hi))
    if not ranges:
        raise ValueError("calibrate_minmax needs at least one batch of inputs")
    return ranges


def qparams(lo: float, hi: float) -> tuple[np.float32, np.uint8]:
    """Asymmetric uint8 scale and zero point for the range [lo, hi] (which always includes 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


class InsertQDQ(Pass):
    """Insert QuantizeLinear -> DequantizeLinear on each calibrated value, feeding every reader the round trip."""

    name = "insert_qdq"

    def __init__(self, ranges: Mapping[str, tuple[float, float]]) -> None:
        self.ranges = dict(ranges)

    def apply(self, graph: Graph) -> dict[str, Any]:
        done = 0
        for v, (lo, hi) in self.ranges.items():
            if v not in graph.types:
                continue
            scale, zp = qparams(lo, hi)
            s = graph.add_initializer(graph.fresh_name(f"{v}_scale"), np.asarray(scale))
            z = graph.add_initializer(graph.fresh_name(f"{v}_zp"), np.asarray(zp))
            q, dq = graph.fresh_name(f"{v}_q"), graph.fresh_name(f"{v}_dq")
            readers = [n for n in graph.nodes if v in n.inputs]
            for n in readers:
                n.inputs = [dq if i == v else i for i in n.inputs]
            graph.nodes.append(Node("QuantizeLinear", [v, s, z], [q], {}, graph.fresh_name("QuantizeLinear")))
            graph.nodes.append(Node("DequantizeLinear", [q, s, z], [dq], {}, graph.fresh_name("DequantizeLinear")))
            t = graph.type_of(v)
            graph.types[q] = TensorType(t.shape, "u8", t.layout)
            graph.types[dq] = t
            done += 1
        if not done:
            return {"reason": "no calibrated value is in the graph"}
        return {"qdq_pairs": done}
