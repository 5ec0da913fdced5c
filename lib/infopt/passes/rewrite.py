"""Small graph-editing helpers the passes share: bypassing a node, freezing attributes, reading constants."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph, Node


def freeze(value: Any) -> Any:
    """A hashable, exact stand-in for an attribute value (lists -> tuples, arrays -> dtype/shape/bytes)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, float):
        return ("float", value)
    return value


def attrs_key(attrs: dict[str, Any]) -> tuple:
    """A hashable key for a node's attributes: equal keys mean identical attributes."""
    return tuple(sorted((k, freeze(v)) for k, v in attrs.items()))


def rename_value(graph: Graph, old: str, new: str) -> None:
    """Rename value ``old`` to ``new`` everywhere: its definition, its uses, graph outputs and types."""
    for n in graph.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]
        n.outputs = [new if o == old else o for o in n.outputs]
    graph.outputs = [new if o == old else o for o in graph.outputs]
    if old in graph.types:
        graph.types[new] = graph.types.pop(old)


def bypass_node(graph: Graph, node: Node, replacement: str) -> bool:
    """Remove single-output ``node`` and make its readers read ``replacement`` instead.

    Graph output names stay stable: if the node's output is a graph output, the value ``replacement``
    is renamed to it (possible when ``replacement`` is a node output that is neither a graph input, a
    constant nor another graph output). Returns False (and changes nothing) when that is impossible.
    """
    (out,) = node.outputs
    if out == replacement:
        return False
    if out in graph.outputs:
        producers = graph.producers()
        if (replacement in graph.outputs or replacement in graph.inputs or replacement in graph.initializers
                or replacement not in producers):
            return False
        graph.remove_nodes([node])
        rename_value(graph, replacement, out)
        return True
    graph.remove_nodes([node])
    graph.replace_uses(out, replacement)
    return True


def single_consumer(graph: Graph, value: str, consumers: dict[str, list[Node]] | None = None) -> Node | None:
    """The only node reading ``value`` if there is exactly one and the value is not a graph output."""
    consumers = graph.consumers() if consumers is None else consumers
    users = consumers.get(value, [])
    if len(users) != 1 or value in graph.outputs:
        return None
    return users[0]


def new_const(graph: Graph, prefix: str, value: np.ndarray) -> str:
    """Add a constant with a fresh name; returns the name."""
    return graph.add_initializer(graph.fresh_name(prefix), np.asarray(value))


def max_relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """max|a - b| / max|b| (the course's tolerance measure; 0 for two all-zero arrays)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    denom = float(np.max(np.abs(b))) if b.size else 0.0
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    return err / denom if denom > 0 else err
