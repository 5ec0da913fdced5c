"""Dead code elimination: drop every node that no graph output depends on, and unused constants."""
from __future__ import annotations

from typing import Any

from ..ir.graph import Graph
from .base import Pass


def live_nodes(graph: Graph) -> list:
    """The nodes some graph output depends on (walking producers back from the outputs), in stored order."""
    producers = graph.producers()
    live: set[int] = set()
    stack = [producers[o] for o in graph.outputs if o in producers]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack.extend(producers[i] for i in node.inputs if i in producers)
    return [n for n in graph.nodes if id(n) in live]


class DeadCodeElimination(Pass):
    """Remove nodes whose outputs reach no graph output, then constants nobody reads. Graph inputs stay."""

    name = "dce"

    def apply(self, graph: Graph) -> dict[str, Any]:
        keep = live_nodes(graph)
        removed = len(graph.nodes) - len(keep)
        n_consts = len(graph.initializers)
        if removed:
            keep_ids = {id(n) for n in keep}
            graph.remove_nodes([n for n in graph.nodes if id(n) not in keep_ids])
        graph.prune_initializers()
        consts = n_consts - len(graph.initializers)
        if not removed and not consts:
            return {"reason": "every node reaches an output"}
        return {"removed_nodes": removed, "removed_constants": consts}
