"""Common subexpression elimination: compute each (op, inputs, attributes) once and reuse the result."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import OPS
from .base import Pass
from .rewrite import attrs_key, rename_value


def cse_key(node, commutative: bool) -> tuple:
    """The identity of a computation: op, inputs (sorted when the op is commutative), exact attributes."""
    inputs = tuple(sorted(node.inputs)) if commutative else tuple(node.inputs)
    return node.op, inputs, attrs_key(node.attrs), len(node.outputs)


class CommonSubexpressionElimination(Pass):
    """Merge nodes that compute the same op on the same inputs with identical attributes.

    Inputs of commutative ops (per the op registry) are put in a canonical order first, so ``Add(a, b)``
    and ``Add(b, a)`` merge. Identical small constants are merged first (``dedupe_constants``), so two
    copies of the same scale factor count as the same input. A duplicate whose output is a graph output is
    kept when the survivor's output is a graph output too (the interface keeps both names).
    """

    name = "cse"

    def __init__(self, dedupe_constants: bool = True, max_const_bytes: int = 1 << 16) -> None:
        self.dedupe_constants = dedupe_constants
        self.max_const_bytes = max_const_bytes

    def _dedupe(self, graph: Graph) -> int:
        seen: dict[tuple, str] = {}
        merged = 0
        for name in list(graph.initializers):
            v = np.asarray(graph.initializers[name])
            if v.nbytes > self.max_const_bytes or name in graph.outputs:
                continue
            key = (v.dtype.str, v.shape, v.tobytes())
            if key in seen:
                graph.replace_uses(name, seen[key])
                merged += 1
            else:
                seen[key] = name
        if merged:
            graph.prune_initializers()
        return merged

    def apply(self, graph: Graph) -> dict[str, Any]:
        consts = self._dedupe(graph) if self.dedupe_constants else 0
        seen: dict[tuple, Any] = {}
        dead = []
        for node in graph.toposort():
            opdef = OPS.get(node.op)
            key = cse_key(node, bool(opdef and opdef.commutative))
            first = seen.get(key)
            if first is None:
                seen[key] = node
                continue
            outs_are_graph_outputs = [o in graph.outputs for o in node.outputs]
            if any(outs_are_graph_outputs) and any(o in graph.outputs for o in first.outputs):
                continue
            for mine, theirs in zip(node.outputs, first.outputs):
                if mine in graph.outputs:  # keep the interface name: the survivor takes it
                    rename_value(graph, theirs, mine)
                    first.outputs = [mine if o == theirs else o for o in first.outputs]
                else:
                    graph.replace_uses(mine, theirs)
            dead.append(node)
        if dead:
            graph.remove_nodes(dead)
        if not dead and not consts:
            return {"reason": "no repeated computation"}
        return {"merged_nodes": len(dead), "merged_constants": consts}
