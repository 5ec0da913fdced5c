"""In-place detection: which node outputs may be written into the buffer of one of their inputs."""
from __future__ import annotations

from typing import Sequence

from ..ir.graph import Graph, Node
from ..ir.ops import OPS


def inplace_candidates(graph: Graph, order: Sequence[Node] | None = None) -> dict[str, str]:
    """Map output -> input whose buffer it may reuse: an elementwise op whose input has the output's exact type,
    is read for the last time by this node, and is neither a graph input, a constant nor a graph output."""
    order = list(graph.toposort() if order is None else order)
    last_use: dict[str, int] = {}
    for t, node in enumerate(order):
        for i in node.inputs:
            if i:
                last_use[i] = t
    reused: set[str] = set()
    result: dict[str, str] = {}
    for t, node in enumerate(order):
        opdef = OPS.get(node.op)
        if opdef is None or not opdef.elementwise or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        t_out = graph.types.get(out)
        for i in node.inputs:
            if (i and i not in reused and last_use.get(i) == t and i not in graph.inputs and i not in graph.initializers
                    and i not in graph.outputs and graph.types.get(i) == t_out and node.inputs.count(i) == 1):
                result[out] = i
                reused.add(i)
                break
    return result
