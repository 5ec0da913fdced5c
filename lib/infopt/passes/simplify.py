"""Algebraic simplification and strength reduction: identities removed, costly ops replaced by cheap ones.

Rewrites: x*1, x+0, x-0, x/1, x^1 -> x; x/c -> x*(1/c); x^2 -> x*x; x^0.5 -> sqrt(x); Transpose of
Transpose -> one Transpose (or nothing); Reshape of Reshape -> one Reshape; Reshape or Transpose that
changes nothing -> removed; Identity and inference-mode Dropout -> removed. A rewrite that would change the
output's shape or dtype (e.g. x*1 where the 1 broadcasts x to a bigger shape) is not made.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph, Node
from .base import Pass
from .rewrite import bypass_node, new_const


def _const(graph: Graph, name: str) -> np.ndarray | None:
    return np.asarray(graph.initializers[name]) if name in graph.initializers else None


def _is_scalar_const(graph: Graph, name: str, value: float) -> bool:
    """True when ``name`` is a constant whose every element equals ``value``."""
    v = _const(graph, name)
    return v is not None and v.size > 0 and bool(np.all(v == value))


def _same_type(graph: Graph, a: str, b: str) -> bool:
    ta, tb = graph.types.get(a), graph.types.get(b)
    return ta is not None and tb is not None and ta.shape == tb.shape and ta.dtype == tb.dtype


def _float(graph: Graph, name: str) -> bool:
    t = graph.types.get(name)
    return t is not None and t.dtype in ("f16", "f32", "f64")


class AlgebraicSimplification(Pass):
    """Remove algebraic identities and apply strength reduction (see the module docstring for the list)."""

    name = "simplify"

    def _rewrite(self, graph: Graph, node: Node, producers: dict[str, Node], counts: dict[str, int]) -> bool:
        op, ins = node.op, node.inputs
        out = node.outputs[0] if node.outputs else ""

        def bypass(value: str, rule: str) -> bool:
            if _same_type(graph, value, out) and bypass_node(graph, node, value):
                counts[rule] = counts.get(rule, 0) + 1
                return True
            return False

        if op == "Identity":
            return bypass(ins[0], "identity")
        if op == "Dropout":
            if len(node.outputs) > 1 and node.outputs[1] and any(node.outputs[1] in n.inputs for n in graph.nodes):
                return False  # the mask is used: keep it
            if len(node.outputs) > 1 and node.outputs[1] in graph.outputs:
                return False
            node.outputs = node.outputs[:1]
            return bypass(ins[0], "dropout")
        if op in ("Mul", "Add") and len(ins) == 2:
            neutral = 1.0 if op == "Mul" else 0.0
            for x, c in ((ins[0], ins[1]), (ins[1], ins[0])):
                if _is_scalar_const(graph, c, neutral) and bypass(x, f"x{'*1' if op == 'Mul' else '+0'}"):
                    return True
            return False
        if op == "Sub" and len(ins) == 2 and _is_scalar_const(graph, ins[1], 0.0):
            return bypass(ins[0], "x-0")
        if op == "Div" and len(ins) == 2:
            if _is_scalar_const(graph, ins[1], 1.0):
                return bypass(ins[0], "x/1")
            c = _const(graph, ins[1])
            if c is not None and _float(graph, ins[1]) and np.all(c != 0):
                node.op = "Mul"
                node.inputs = [ins[0], new_const(graph, "reciprocal", (1.0 / c).astype(c.dtype))]
                counts["x/c->x*(1/c)"] = counts.get("x/c->x*(1/c)", 0) + 1
                return True
            return False
        if op == "Pow" and len(ins) == 2:
            e = _const(graph, ins[1])
            if e is None or e.size != 1 or not _same_type(graph, ins[0], out):
                return False
            e = float(e.reshape(()))
            if e == 1.0:
                return bypass(ins[0], "x^1")
            if e == 2.0:
                node.op, node.inputs, node.attrs = "Mul", [ins[0], ins[0]], {}
                counts["x^2->x*x"] = counts.get("x^2->x*x", 0) + 1
                return True
            if e == 0.5:
                node.op, node.inputs, node.attrs = "Sqrt", [ins[0]], {}
                counts["x^0.5->sqrt"] = counts.get("x^0.5->sqrt", 0) + 1
                return True
            return False
        if op == "Transpose":
            perm = list(node.attrs.get("perm", []))
            rank = graph.type_of(ins[0]).rank
            if not perm:
                perm = list(range(rank))[::-1]
                node.attrs["perm"] = perm
            if perm == list(range(rank)):
                return bypass(ins[0], "transpose(identity)")
            inner = producers.get(ins[0])
            if inner is not None and inner.op == "Transpose" and inner.attrs.get("perm"):
                p1 = list(inner.attrs["perm"])
                composed = [p1[p] for p in perm]
                node.inputs = [inner.inputs[0]]
                node.attrs["perm"] = composed
                counts["transpose(transpose)"] = counts.get("transpose(transpose)", 0) + 1
                if composed == list(range(len(composed))):
                    bypass(inner.inputs[0], "transpose(identity)")
                return True
            return False
        if op == "Reshape":
            if _same_type(graph, ins[0], out):
                return bypass(ins[0], "reshape(same shape)")
            inner = producers.get(ins[0])
            if inner is not None and inner.op == "Reshape":
                shape = np.array(graph.type_of(out).shape, dtype=np.int64)
                node.inputs = [inner.inputs[0], new_const(graph, "shape", shape)]
                node.attrs = {}
                counts["reshape(reshape)"] = counts.get("reshape(reshape)", 0) + 1
                return True
            return False
        return False

    def apply(self, graph: Graph) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for _ in range(8):
            changed = False
            producers = graph.producers()
            for node in list(graph.toposort()):
                if node not in graph.nodes:
                    continue
                if self._rewrite(graph, node, producers, counts):
                    changed = True
                    producers = graph.producers()
            if not changed:
                break
        graph.prune_initializers()
        if not counts:
            return {"reason": "no identity or strength reduction applies"}
        return counts
