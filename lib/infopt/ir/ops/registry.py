"""The op registry: for every op, shape/dtype inference and a numpy reference implementation.

Ops follow ONNX semantics and attribute names (opset 17), so ONNX import and export are direct.
Other layers register their own ops here too (for example the fused ops of ``infopt.passes``).

Shape-like inputs (Reshape's ``shape``, Slice's ``starts``...) must be known when types are inferred.
An op that needs them lists their positions in ``OpDef.const_inputs``; its ``infer`` is then called as
``infer(input_types, attrs, consts)`` where ``consts[i]`` is the VALUE of input i (a numpy array) when it
is a constant (an initializer, a Constant node, or a small computation on constants and static shapes,
see ``constant_value``), else None. Ops without ``const_inputs`` keep the two-argument ``infer``.
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
    (after broadcasting), which fusion relies on. ``const_inputs`` lists the inputs whose values
    ``infer`` needs (it is then called as ``infer(types, attrs, consts)``); ``num_outputs`` bounds the
    output count for ops with optional trailing outputs (``infer`` returns them all; the node keeps a prefix).
    """

    name: str
    infer: InferFn
    compute: ComputeFn
    num_inputs: tuple[int, int] = (1, 1)  # (min, max) count of inputs
    commutative: bool = False
    elementwise: bool = False
    doc: str = ""
    const_inputs: tuple[int, ...] = ()  # input positions whose values infer needs: infer(types, attrs, consts)
    num_outputs: tuple[int, int] | None = None  # (min, max) count of outputs; None: whatever infer returns


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


# Ops cheap enough to evaluate while inferring types, when all their inputs are known constants
# (the Shape -> Gather -> Concat -> Reshape chains that exporters emit).
_FOLDABLE = {
    "Constant", "Shape", "Gather", "Concat", "Unsqueeze", "Squeeze", "Cast", "Slice", "Add", "Sub", "Mul",
    "Div", "Equal", "Where", "Identity", "Reshape", "Max", "Min", "Neg", "ReduceProd", "Range",
}
_MAX_FOLD_ELEMENTS = 4096


def constant_value(graph: Graph, name: str, _depth: int = 0) -> np.ndarray | None:
    """The value of ``name`` if it is known before running the graph, else None.

    Known: initializers, Constant nodes, Shape of a statically typed value, and small foldable ops
    (Gather, Concat, Unsqueeze, Cast...) whose inputs are all known. Used by shape inference.
    """
    if not name:
        return None
    if name in graph.initializers:
        return np.asarray(graph.initializers[name])
    if _depth > 64:
        return None
    node = next((n for n in graph.nodes if name in n.outputs), None)
    if node is None or node.op not in _FOLDABLE or node.op not in OPS:
        return None
    if node.op == "Shape":
        t = graph.types.get(node.inputs[0]) if node.inputs else None
        if t is None:
            return None
        shape = np.array(t.shape, dtype=np.int64)
        start, end = node.attrs.get("start", 0), node.attrs.get("end", None)
        return shape[start:end]
    vals = []
    for i in node.inputs:
        v = constant_value(graph, i, _depth + 1) if i else None
        if i and (v is None or v.size > _MAX_FOLD_ELEMENTS):
            return None
        vals.append(v)
    try:
        outs = OPS[node.op].compute(vals, node.attrs)
    except Exception:  # folding is best effort: inference reports the real problem
        return None
    out = np.asarray(outs[node.outputs.index(name)])
    return out if out.size <= _MAX_FOLD_ELEMENTS else None


def infer_node(
    graph: Graph, node: Node, consts: Sequence[np.ndarray | None] | None = None
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


def infer_shapes(graph: Graph) -> Graph:
    """(Re)compute the type of every node output in topological order, in place; returns the graph."""
    for node in graph.toposort():
        for out, t in zip(node.outputs, infer_node(graph, node)):
            graph.types[out] = t
    return graph
