"""Quantization as a graph pass (a preview of unit 12): calibrate value ranges by running the graph, then insert
QuantizeLinear/DequantizeLinear pairs so chosen values pass through uint8. The two ops are standard ONNX ops,
defined in ``infopt.ir.ops.quantize``."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.types import TensorType
from ..passes.base import Pass


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
