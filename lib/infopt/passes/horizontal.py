"""Horizontal fusion: sibling ops that read the same input with constant weights become one wider op and a Split.

A transformer's Q, K and V projections (three MatMuls of one activation) become one MatMul against the
concatenated weights; parallel convolution branches with the same window become one Conv with the output channels
stacked. One kernel instead of n, the shared input read once, and a wider GEMM that keeps the hardware busier —
on a GPU; on a CPU it measures as roughly a wash (``benchmarks/passes.py``), so it is not in ``default_pipeline``.
Legal when the siblings have the same op and attributes and constant weights of matching shape; the merged result
is split back under the old names, so every reader sees exactly the value it read before.
"""
from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.types import TensorType
from .base import Pass

MERGEABLE = ("MatMul", "Conv", "FusedConv")


def sibling_key(graph: Graph, node: Node) -> Hashable | None:
    """What siblings must share to merge (op, input, attributes, weight shape...); None if ``node`` cannot merge."""
    if node.op not in MERGEABLE or len(node.outputs) != 1 or not node.inputs or len(node.inputs) < 2:
        return None
    x, w = node.inputs[0], node.inputs[1]
    if not x or x in graph.initializers or w not in graph.initializers:
        return None
    wv = np.asarray(graph.initializers[w])
    if node.op == "MatMul":
        if wv.ndim != 2:
            return None  # batched weights: the concatenation axis would not be the output's last
        return ("MatMul", x, wv.dtype.str, wv.shape[0])
    if int(node.attrs.get("group", 1)) != 1 or len(node.inputs) > 3:  # grouped, or a residual Z input
        return None
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if bias is not None and bias not in graph.initializers:
        return None
    attrs = repr(sorted((k, v.decode() if isinstance(v, bytes) else v) for k, v in node.attrs.items()))
    return (node.op, x, wv.dtype.str, wv.shape[1:], bias is not None, attrs)


class HorizontalFusion(Pass):
    """Merge groups of sibling MatMul / Conv / FusedConv nodes (same input, same attributes, constant weights)."""

    name = "horizontal_fusion"

    def __init__(self, min_group: int = 2) -> None:
        if min_group < 2:
            raise ValueError(f"min_group must be at least 2 (a group of one has nothing to merge), got {min_group}")
        self.min_group = min_group

    def apply(self, graph: Graph) -> dict[str, Any]:
        groups: dict[Hashable, list[Node]] = {}
        for node in graph.nodes:
            key = sibling_key(graph, node)
            if key is not None:
                groups.setdefault(key, []).append(node)
        merged: dict[int, list[Node]] = {}  # id(first sibling) -> the nodes that replace the whole group
        gone: set[int] = set()
        for members in groups.values():
            if len(members) >= self.min_group:
                merged[id(members[0])] = self._merge(graph, members)
                gone.update(id(m) for m in members)
        if not merged:
            return {"reason": "no MatMul/Conv siblings share an input, attributes and constant weights"}
        nodes: list[Node] = []
        for node in graph.nodes:
            if id(node) in merged:
                nodes.extend(merged[id(node)])
            elif id(node) not in gone:
                nodes.append(node)
        n_before = len(graph.nodes)
        graph.nodes = nodes
        graph.prune_initializers()
        return {"groups": len(merged), "nodes_merged": len(gone), "nodes_saved": n_before - len(nodes)}

    @staticmethod
    def _merge(graph: Graph, members: list[Node]) -> list[Node]:
        """One wide node computing every member's output side by side, and a Split back to the members' names."""
        first = members[0]
        ws = [np.asarray(graph.initializers[m.inputs[1]]) for m in members]
        conv = first.op != "MatMul"
        axis_w = 0 if conv else 1  # Conv weights are (out, in, kh, kw); MatMul weights (in, out)
        sizes = [int(w.shape[axis_w]) for w in ws]
        inputs = [first.inputs[0], graph.add_initializer(graph.fresh_name("w_hfused"), np.concatenate(ws, axis=axis_w))]
        if conv and len(first.inputs) > 2 and first.inputs[2]:
            bias = np.concatenate([np.asarray(graph.initializers[m.inputs[2]]) for m in members])
            inputs.append(graph.add_initializer(graph.fresh_name("b_hfused"), bias))
        wide_out = graph.fresh_name(f"{first.outputs[0]}_hfused")
        wide = Node(first.op, inputs, [wide_out], dict(first.attrs), graph.fresh_name(f"{first.op}_hfused"))
        out_type = graph.type_of(first.outputs[0])
        axis_y = 1 if conv else out_type.rank - 1  # Conv output channels are dim 1; MatMul's are the last dim
        shape = list(out_type.shape)
        shape[axis_y] = sum(sizes)
        graph.types[wide_out] = TensorType(tuple(shape), out_type.dtype, out_type.layout)
        split_sizes = graph.add_initializer(graph.fresh_name("split_hfused"), np.array(sizes, np.int64))
        split = Node("Split", [wide_out, split_sizes], [m.outputs[0] for m in members], {"axis": axis_y},
                     graph.fresh_name("Split_hfused"))
        return [wide, split]
