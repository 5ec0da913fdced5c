"""Blocked layout (NCHWc): convolutions on channel blocks one SIMD register wide, as onnxruntime's CPU kernels run.

An NCHWc tensor stores [N, C/B, H, W, B]: the channels of one pixel come in blocks of B (8 or 16 floats,
one AVX register), contiguous. As onnxruntime does, its logical shape stays 4-D, [N, C padded to B, H, W]:
the array holds the blocked memory order under that shape. A convolution then updates B output channels per vector instruction. The
weights are reordered once, ahead of time: [O/B, I/B, kh, kw, Bi, Bo] ("OIHWBiBo"), or [O/B, I, kh, kw, Bo]
when the convolution reads a plain NCHW input with few channels (the image). ``ToNCHWc`` rewrites Conv,
FusedConv, MaxPool and GlobalAveragePool into these ops, reorders between layouts only where needed, and
exports them as onnxruntime's ``com.microsoft.nchwc`` ops. The ops and their reference kernels (unblock,
compute, reblock), which make the interpreter run the result too, are defined in ``infopt.ir.ops.layouts``.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.ops import get_op, infer_shapes
from ..ir.ops.layouts import (
    NCHWC_ONLY_ATTRS, block_nchw, blocked_type, reorder_weights, unblock, unreorder_weights,
)
from .base import Pass

__all__ = ["EXPORT_NAMES", "NCHWC_DOMAIN", "ToNCHWc", "block_nchw", "ort_block_size", "reorder_weights",
           "to_ort_nchwc", "unblock", "unreorder_weights"]

NCHWC_DOMAIN = "com.microsoft.nchwc"
# our op name -> the op_type onnxruntime knows in the nchwc domain
EXPORT_NAMES = {"NchwcConv": "Conv", "NchwcMaxPool": "MaxPool", "NchwcGlobalAveragePool": "GlobalAveragePool",
                "ReorderInput": "ReorderInput", "ReorderOutput": "ReorderOutput"}
OURS_ONLY_ATTRS = NCHWC_ONLY_ATTRS


@functools.lru_cache(maxsize=1)
def ort_block_size() -> int:
    """The NCHWc block size onnxruntime uses on this CPU (probed from its own NCHWc rewrite of a tiny conv)."""
    import os
    import tempfile

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from ..runtime.onnxruntime_session import ort_session

    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "probe",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], initializer=[w])
    path = os.path.join(tempfile.mkdtemp(prefix="infopt_nchwc_"), "probe.onnx")
    ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "all", optimized_path=path)
    m = onnx.load(path)
    shapes = [numpy_helper.to_array(i).shape for i in m.graph.initializer]
    return int(max(s[0] for s in shapes if len(s) == 4))


class ToNCHWc(Pass):
    """Rewrite convolutions (and the pools between them) to the NCHWc layout with reordered weights.

    A Conv/FusedConv qualifies when it is 2-D, ungrouped, has constant weights, and its output channels are a
    multiple of the block; its input is blocked (input channels a multiple of the block) or, for the image,
    read as plain NCHW. Values stay blocked from one converted node to the next; a ReorderOutput gives the
    plain tensor to any other reader (DCE drops the ones nobody reads).
    """

    name = "to_nchwc"

    def __init__(self, block: int | None = None) -> None:
        self.block = block

    def apply(self, graph: Graph) -> dict[str, Any]:
        b = self.block or ort_block_size()
        blocked: dict[str, str] = {}  # plain value -> its blocked twin
        nodes: list[Node] = []
        stats = {"convs": 0, "pools": 0, "reorders_in": 0}

        def blocked_of(v: str) -> str:
            if v not in blocked:
                name = graph.fresh_name(f"{v}_nchwc")
                nodes.append(Node("ReorderInput", [v], [name], {"block": b}, graph.fresh_name("ReorderInput")))
                graph.types[name] = blocked_type(graph.type_of(v), b)
                blocked[v] = name
                stats["reorders_in"] += 1
            return blocked[v]

        def emit(node: Node, op: str, ins: list[str], attrs: dict[str, Any]) -> None:
            out = node.outputs[0]
            yb = graph.fresh_name(f"{out}_nchwc")
            new = Node(op, ins, [yb], attrs, graph.fresh_name(op))
            nodes.append(new)
            graph.types[yb] = get_op(op).infer([graph.type_of(i) if i else None for i in ins], attrs)[0]
            c = graph.type_of(out).shape[1]
            nodes.append(Node("ReorderOutput", [yb], [out], {"channels": c, "block": b},
                              graph.fresh_name("ReorderOutput")))
            blocked[out] = yb

        for node in graph.toposort():
            t = graph.types.get(node.inputs[0]) if node.inputs else None
            if node.op in ("Conv", "FusedConv") and t is not None and t.rank == 4 and self._convertible(graph, node, b):
                w = graph.initializers[node.inputs[1]]
                o, i = w.shape[:2]
                nchw_input = i % b != 0
                x = node.inputs[0] if nchw_input else blocked_of(node.inputs[0])
                wr = graph.add_initializer(graph.fresh_name("w_nchwc"), reorder_weights(w, b, nchw_input))
                ins = [x, wr, node.inputs[2] if len(node.inputs) > 2 else ""]
                if len(node.inputs) > 3 and node.inputs[3]:
                    ins.append(blocked_of(node.inputs[3]))
                attrs = {"dilations": [1, 1], "strides": [1, 1], "pads": [0, 0, 0, 0], "group": 1,
                         "kernel_shape": list(w.shape[2:]), **node.attrs, "block": b}  # nchwc shape inference
                attrs.pop("auto_pad", None)  # needs every attribute spelled out for 2-D
                if nchw_input:
                    attrs["nchw_input"] = 1
                if not ins[2] and len(ins) == 3:
                    ins = ins[:2]
                emit(node, "NchwcConv", ins, attrs)
                stats["convs"] += 1
            elif node.op in ("MaxPool", "GlobalAveragePool") and node.inputs[0] in blocked and len(node.outputs) == 1:
                attrs = {**node.attrs, "block": b}
                if node.op == "MaxPool":
                    attrs = {"dilations": [1, 1], "strides": [1, 1], "pads": [0, 0, 0, 0], **attrs}
                    attrs.pop("auto_pad", None)
                emit(node, "Nchwc" + node.op, [blocked[node.inputs[0]]], attrs)
                stats["pools"] += 1
            else:
                nodes.append(node)
        if not stats["convs"]:
            return {"reason": f"no convolution can use {b}-channel blocks"}
        graph.nodes = nodes
        from .dce import DeadCodeElimination

        DeadCodeElimination().apply(graph)
        infer_shapes(graph)  # reordered-back values are tagged NCHW now, and so is what reads them
        stats["reorders_out"] = sum(n.op == "ReorderOutput" for n in graph.nodes)
        stats["reorders_in"] = sum(n.op == "ReorderInput" for n in graph.nodes)
        return stats

    @staticmethod
    def _convertible(graph: Graph, node: Node, b: int) -> bool:
        w = graph.initializers.get(node.inputs[1])
        if w is None or w.ndim != 4 or int(node.attrs.get("group", 1)) != 1:
            return False
        if node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
            return False
        if len(node.inputs) > 2 and node.inputs[2] and node.inputs[2] not in graph.initializers:
            return False
        o, i = w.shape[:2]
        return o % b == 0 and (i % b == 0 or i < b)


def to_ort_nchwc(model: Any) -> Any:
    """Rename our NCHWc ops in an exported ModelProto to onnxruntime's com.microsoft.nchwc ops (in place)."""
    from ..ir.onnx_io import sync_opset_imports

    used = False
    for n in model.graph.node:
        if n.op_type in EXPORT_NAMES:
            n.op_type = EXPORT_NAMES[n.op_type]
            n.domain = NCHWC_DOMAIN
            keep = [a for a in n.attribute if a.name not in OURS_ONLY_ATTRS]
            del n.attribute[:]
            n.attribute.extend(keep)
            used = True
    return sync_opset_imports(model) if used else model
