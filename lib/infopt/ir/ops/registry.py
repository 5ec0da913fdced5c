"""The op registry: for every op, shape/dtype inference and a numpy reference implementation.

Ops follow ONNX semantics and attribute names (opset 17), so ONNX import and export are direct.
Other layers register their own ops here too (for example the fused ops of ``infopt.passes``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..graph import Graph, GraphError, Node
from ..types import TensorType

InferFn = Callable[[Sequence["TensorType | None"], dict[str, Any]], list[TensorType]]
ComputeFn = Callable[[Sequence["np.ndarray | None"], dict[str, Any]], list[np.ndarray]]


class UnsupportedOpError(NotImplementedError):
    """An op the registry does not know; the message names the op (and node, where known) and what to do."""


@dataclass(frozen=True)
class OpDef:
    """What the IR knows about one op.

    ``infer(input_types, attrs)`` returns the output types (None stands for an absent optional input);
    ``compute(inputs, attrs)`` returns the outputs as numpy arrays. ``commutative`` lets CSE canonicalize
    input order; ``elementwise`` marks ops whose output element i depends only on input element i
    (after broadcasting), which fusion relies on.
    """

    name: str
    infer: InferFn
    compute: ComputeFn
    num_inputs: tuple[int, int] = (1, 1)  # (min, max) count of inputs
    commutative: bool = False
    elementwise: bool = False
    doc: str = ""


OPS: dict[str, OpDef] = {}


def register_op(opdef: OpDef) -> OpDef:
    """Add (or replace) an op in the registry."""
    OPS[opdef.name] = opdef
    return opdef


def get_op(op: str, node: Node | None = None) -> OpDef:
    """The definition of ``op``, or an UnsupportedOpError naming it and the node."""
    try:
        return OPS[op]
    except KeyError:
        where = f" (node {node.label})" if node is not None else ""
        raise UnsupportedOpError(
            f"op {op!r}{where} is not in the infopt op registry; supported ops: {', '.join(sorted(OPS))}. "
            "Register it with infopt.ir.register_op(OpDef(...)) or rewrite the model to avoid it."
        ) from None


def infer_node(graph: Graph, node: Node) -> list[TensorType]:
    """Infer the output types of ``node`` from the types of its inputs in ``graph``."""
    opdef = get_op(node.op, node)
    lo, hi = opdef.num_inputs
    if not lo <= len(node.inputs) <= hi:
        raise GraphError(
            f"node {node.label}: {node.op} takes {lo}..{hi} inputs, got {len(node.inputs)} ({node.inputs})"
        )
    in_types = [graph.type_of(i) if i else None for i in node.inputs]
    try:
        out = opdef.infer(in_types, node.attrs)
    except GraphError as e:
        raise GraphError(f"node {node.label} ({node.op}): {e}") from None
    except (ValueError, IndexError, KeyError, TypeError) as e:
        raise GraphError(
            f"node {node.label} ({node.op}): cannot infer output types from inputs "
            f"{[str(t) for t in in_types]} and attributes {node.attrs}: {e}"
        ) from None
    if len(out) != len(node.outputs):
        raise GraphError(f"node {node.label}: {node.op} defines {len(out)} outputs but the node lists {len(node.outputs)}")
    return out


def infer_shapes(graph: Graph) -> Graph:
    """(Re)compute the type of every node output in topological order, in place; returns the graph."""
    for node in graph.toposort():
        for out, t in zip(node.outputs, infer_node(graph, node)):
            graph.types[out] = t
    return graph
