"""The graph IR: SSA values named by strings, nodes that define them, and a Graph that owns both.

A value is defined exactly once: by a graph input, by a constant initializer, or as the output of
one node. Nodes refer to values by name, like ONNX, so a graph is easy to print, diff and rewrite.
Producer and consumer maps are computed on demand, never cached, so a rewrite cannot leave them stale.
"""
from __future__ import annotations

import copy
import itertools
from typing import Any, Iterable, Mapping

import numpy as np

from .errors import GraphError
from .node import Node
from .ops.infer import infer_node
from .opset import DEFAULT_OPSET
from .printer import to_text
from .types import TensorType

__all__ = ["Graph", "GraphError", "Node"]


class Graph:
    """A dataflow graph: typed inputs, constant initializers, nodes, and the values returned as outputs.

    ``opset`` is the ONNX default-domain opset the graph's nodes are written for (the model's, after import;
    ``DEFAULT_OPSET`` for a graph built in Python); export writes it unless asked for another.
    """

    def __init__(
        self,
        name: str = "graph",
        inputs: Iterable[str] = (),
        outputs: Iterable[str] = (),
        nodes: Iterable[Node] = (),
        initializers: Mapping[str, np.ndarray] | None = None,
        types: Mapping[str, TensorType] | None = None,
        opset: int = DEFAULT_OPSET,
    ) -> None:
        self.name = name
        self.opset = int(opset)
        self.inputs: list[str] = list(inputs)
        self.outputs: list[str] = list(outputs)
        self.nodes: list[Node] = list(nodes)
        self.initializers: dict[str, np.ndarray] = dict(initializers or {})
        self.types: dict[str, TensorType] = dict(types or {})
        for k, v in self.initializers.items():
            self.types.setdefault(k, TensorType.of(v))
        self._counter = itertools.count()

    # ----- building -------------------------------------------------------------------------
    def add_input(self, name: str, type: TensorType) -> str:
        """Declare a graph input of the given type; returns its name."""
        self.inputs.append(name)
        self.types[name] = type
        return name

    def add_initializer(self, name: str, value: np.ndarray) -> str:
        """Add a constant tensor; returns its name."""
        value = np.asarray(value)
        self.initializers[name] = value
        self.types[name] = TensorType.of(value)
        return name

    def fresh_name(self, prefix: str = "v") -> str:
        """A value or node name not used anywhere in the graph yet."""
        used = self.value_names() | {n.name for n in self.nodes}
        while True:
            cand = f"{prefix}_{next(self._counter)}"
            if cand not in used:
                return cand

    def add_node(
        self,
        op: str,
        inputs: list[str],
        attrs: Mapping[str, Any] | None = None,
        outputs: list[str] | int | None = None,
        name: str | None = None,
        infer: bool = True,
    ) -> Node:
        """Append a node; output names are made fresh unless given, and their types inferred from the op registry."""
        if outputs is None or isinstance(outputs, int):
            outputs = [self.fresh_name(op.lower()) for _ in range(outputs or 1)]
        node = Node(op, list(inputs), list(outputs), dict(attrs or {}), name or self.fresh_name(op))
        self.nodes.append(node)
        if infer:
            for out, t in zip(node.outputs, infer_node(self, node)):
                if out:
                    self.types[out] = t
        return node

    # ----- queries ----------------------------------------------------------------------------
    def value_names(self) -> set[str]:
        """Every value name that is defined or used."""
        names = set(self.inputs) | set(self.initializers) | set(self.outputs)
        for n in self.nodes:
            names.update(i for i in n.inputs if i)
            names.update(n.outputs)
        return names

    def producers(self) -> dict[str, Node]:
        """Map from value name to the node that defines it (graph inputs and constants have none; the empty name is an
        absent optional output, which no node defines)."""
        return {o: n for n in self.nodes for o in n.outputs if o}

    def consumers(self) -> dict[str, list[Node]]:
        """Map from value name to the nodes that read it, in node order."""
        users: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i and n not in users.setdefault(i, []):
                    users[i].append(n)
        return users

    def is_constant(self, name: str) -> bool:
        return name in self.initializers

    def type_of(self, name: str) -> TensorType:
        """The static type of a value, or a GraphError that names it."""
        try:
            return self.types[name]
        except KeyError:
            raise GraphError(f"value %{name} has no type; run shape inference or declare it") from None

    def node_by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in graph {self.name!r}")

    def toposort(self) -> list[Node]:
        """Nodes in a valid execution order (stable: keeps the stored order where it already is valid)."""
        producers = self.producers()
        order: list[Node] = []
        state: dict[int, int] = {}  # id(node) -> 1 visiting, 2 done
        for root in self.nodes:
            stack: list[tuple[Node, Iterable[str]]] = [(root, iter(root.inputs))]
            if state.get(id(root)) == 2:
                continue
            state[id(root)] = 1
            while stack:
                node, it = stack[-1]
                for name in it:
                    dep = producers.get(name)
                    if dep is None or state.get(id(dep)) == 2:
                        continue
                    if state.get(id(dep)) == 1:
                        raise GraphError(f"cycle: node {dep.label} depends on itself through value %{name}")
                    state[id(dep)] = 1
                    stack.append((dep, iter(dep.inputs)))
                    break
                else:
                    stack.pop()
                    state[id(node)] = 2
                    order.append(node)
        return order

    # ----- editing ----------------------------------------------------------------------------
    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of value ``old`` (nodes and graph outputs) read ``new`` instead."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def remove_nodes(self, dead: Iterable[Node]) -> None:
        """Drop nodes (by identity) and forget the types of the values only they defined."""
        dead_ids = {id(n) for n in dead}
        gone = [n for n in self.nodes if id(n) in dead_ids]
        self.nodes = [n for n in self.nodes if id(n) not in dead_ids]
        for n in gone:
            for o in n.outputs:
                if o not in self.outputs:
                    self.types.pop(o, None)

    def prune_initializers(self) -> None:
        """Forget constants that no node or output reads."""
        used = {i for n in self.nodes for i in n.inputs} | set(self.outputs)
        for k in [k for k in self.initializers if k not in used]:
            del self.initializers[k]
            self.types.pop(k, None)

    def copy(self) -> "Graph":
        """A deep copy of structure and attributes; constant arrays are shared (treat them as immutable)."""
        g = Graph(
            self.name,
            self.inputs,
            self.outputs,
            [Node(n.op, n.inputs, n.outputs, copy.deepcopy(n.attrs), n.name) for n in self.nodes],
            dict(self.initializers),
            dict(self.types),
            self.opset,
        )
        return g

    # ----- summaries ----------------------------------------------------------------------------
    def op_counts(self) -> dict[str, int]:
        """How many nodes of each op, most common first."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return (
            f"Graph({self.name!r}: {len(self.inputs)} inputs, {len(self.nodes)} nodes, "
            f"{len(self.initializers)} constants, {len(self.outputs)} outputs)"
        )

    def __str__(self) -> str:
        return to_text(self)
