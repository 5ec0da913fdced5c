"""One operation of the graph IR: ``outputs = op(*inputs, **attrs)``, values referred to by name."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    """One operation: ``outputs = op(*inputs, **attrs)``. An empty input name marks an absent optional input."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    def __post_init__(self) -> None:
        self.inputs = list(self.inputs)
        self.outputs = list(self.outputs)
        self.attrs = dict(self.attrs)

    @property
    def label(self) -> str:
        """How errors and pictures name this node: its name, or its op and first output."""
        return self.name or f"{self.op}->{self.outputs[0] if self.outputs else '?'}"

    def __repr__(self) -> str:
        return f"Node({self.op!r}, inputs={self.inputs}, outputs={self.outputs}, attrs={self.attrs}, name={self.name!r})"
