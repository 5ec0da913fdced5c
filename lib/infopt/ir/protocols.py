"""What shape inference and the text printer read from a graph, as a structural type.

``infopt.ir.graph.Graph`` satisfies it; the modules that only read graphs depend on this protocol instead of
importing graph.py, so graph.py can use them (type inference in ``add_node``, the text form in ``str``) without
an import circle.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .node import Node
from .types import TensorType


class GraphLike(Protocol):
    """A named graph of nodes over typed values: inputs, constants (initializers) and outputs."""

    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    initializers: dict[str, np.ndarray]
    types: dict[str, TensorType]
    opset: int

    def type_of(self, name: str) -> TensorType:
        """The static type of a value, or a GraphError that names it."""
        ...  # pragma: no cover

    def fresh_name(self, prefix: str = "v") -> str:
        """A value or node name not used anywhere in the graph yet."""
        ...  # pragma: no cover

    def toposort(self) -> list[Node]:
        """The nodes in a valid execution order."""
        ...  # pragma: no cover


