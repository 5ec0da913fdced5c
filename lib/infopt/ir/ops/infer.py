"""Type inference over a graph: each node's output types from its inputs' types (and constant inputs' values).

It reads graphs through ``infopt.ir.protocols.GraphLike`` (graph.py calls it from ``Graph.add_node``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import GraphError
from ..node import Node
from ..protocols import GraphLike
from ..types import TensorType
from .registry import OPS, get_op

# Ops cheap enough to evaluate while inferring types, when all their inputs are known constants
# (the Shape -> Gather -> Concat -> Reshape chains that exporters emit).
FOLDABLE = frozenset({
    "Constant", "Shape", "Size", "Gather", "Concat", "Unsqueeze", "Squeeze", "Cast", "CastLike", "Slice", "Add",
    "Sub", "Mul", "Div", "Equal", "Less", "Where", "Identity", "Reshape", "Max", "Min", "Neg", "ReduceProd",
    "Range", "ConstantOfShape", "Expand", "Sum", "Abs", "Mod",
})
MAX_FOLD_ELEMENTS = 4096
_MAX_DEPTH = 64


def constant_value(graph: GraphLike, name: str, _depth: int = 0) -> np.ndarray | None:
    """The value of ``name`` if it is known before running the graph, else None.

    Known: initializers, Constant nodes, Shape (and Size) of a statically typed value, and small foldable ops
    (Gather, Concat, Unsqueeze, Cast...) whose inputs are all known. Used by shape inference.
    """
    if not name:
        return None
    if name in graph.initializers:
        return np.asarray(graph.initializers[name])
    if _depth > _MAX_DEPTH:
        return None
    node = next((n for n in graph.nodes if name in n.outputs), None)
    if node is None or node.op not in FOLDABLE or node.op not in OPS:
        return None
    if node.op in ("Shape", "Size"):
        t = graph.types.get(node.inputs[0]) if node.inputs else None
        if t is None:
            return None
        if node.op == "Size":
            return np.array(t.size, dtype=np.int64)
        shape = np.array(t.shape, dtype=np.int64)
        start, end = node.attrs.get("start", 0), node.attrs.get("end", None)
        return shape[start:end]
    vals = []
    for i in node.inputs:
        v = constant_value(graph, i, _depth + 1) if i else None
        if i and (v is None or v.size > MAX_FOLD_ELEMENTS):
            return None
        vals.append(v)
    try:
        outs = OPS[node.op].compute(vals, node.attrs)
    except Exception:  # folding is best effort: inference reports the real problem
        return None
    out = np.asarray(outs[node.outputs.index(name)])
    return out if out.size <= MAX_FOLD_ELEMENTS else None


def infer_node(
    graph: GraphLike, node: Node, consts: Sequence[np.ndarray | None] | None = None
) -> list[TensorType]:
    """Infer the output types of ``node`` from the types of its inputs in ``graph``.

    For ops with ``const_inputs``, ``consts`` may give the input values (one per input, None where
    unknown); by default they are looked up in the graph with ``constant_value``.
    """
    opdef = get_op(node.op, node)
    lo, hi = opdef.num_inputs
    if not lo <= len(node.inputs) <= hi:
        raise GraphError(
            f"node {node.label}: {node.op} takes {lo}..{hi} inputs, got {len(node.inputs)} ({node.inputs})"
        )
    if opdef.num_outputs is not None:
        olo, ohi = opdef.num_outputs
        if not olo <= len(node.outputs) <= ohi:
            raise GraphError(
                f"node {node.label}: {node.op} defines {olo}..{ohi} outputs, the node lists {len(node.outputs)} "
                f"({node.outputs})"
            )
    in_types = [graph.type_of(i) if i else None for i in node.inputs]
    try:
        if opdef.const_inputs:
            if consts is None:
                consts = [
                    constant_value(graph, name) if k in opdef.const_inputs else None
                    for k, name in enumerate(node.inputs)
                ]
            out = opdef.infer(in_types, node.attrs, list(consts))
        else:
            out = opdef.infer(in_types, node.attrs)
    except GraphError as e:
        raise GraphError(f"node {node.label} ({node.op}): {e}") from None
    except (ValueError, IndexError, KeyError, TypeError) as e:
        raise GraphError(
            f"node {node.label} ({node.op}): cannot infer output types from inputs "
            f"{[str(t) for t in in_types]} and attributes {node.attrs}: {e}"
        ) from None
    if opdef.num_outputs is not None:
        out = out[: len(node.outputs)]  # ops with optional trailing outputs
    if len(out) != len(node.outputs):
        raise GraphError(f"node {node.label}: {node.op} defines {len(out)} outputs but the node lists {len(node.outputs)}")
    return out


def infer_shapes(graph: GraphLike) -> GraphLike:
    """(Re)compute the type of every node output in topological order, in place; returns the graph."""
    for node in graph.toposort():
        for out, t in zip(node.outputs, infer_node(graph, node)):
            if out:
                graph.types[out] = t
    return graph
