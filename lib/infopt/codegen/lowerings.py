"""The lowering table: which graph ops codegen turns into kernels, and for which dtypes.

Each lowering is registered once with ``@lowering("Relu", ..., dtypes=...)`` (a second registration of an op is
an error unless it says ``replace=True``; an op the IR does not define is refused). ``dtypes`` lists the element
types the lowering is correct for: a node with any other input or output dtype is not lowered, so
``compile_graph(fallback="numpy")`` runs it with the reference kernel instead of a wrong one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..ir.facts import FactTable
from ..ir.graph import Graph, Node
from ..ir.ops import OPS
from .kernel_ir import Kernel

FLOATS = ("f32", "f64")
NUMBERS = ("f32", "f64", "i32", "i64")

LowerFn = Callable[[Graph, Node], Kernel]


@dataclass(frozen=True)
class Lowering:
    """A lowering function and the dtypes it handles; calling it lowers a node."""

    fn: LowerFn
    dtypes: tuple[str, ...] = FLOATS

    def accepts(self, graph: Graph, node: Node) -> str | None:
        """None when every input and output dtype of ``node`` is one this lowering handles, else why not."""
        bad = [(v, graph.type_of(v).dtype) for v in [*node.inputs, *node.outputs]
               if v and v in graph.types and graph.type_of(v).dtype not in self.dtypes]
        if bad:
            return (f"its lowering handles {', '.join(self.dtypes)} only; "
                    f"{', '.join(f'%{v} is {d}' for v, d in bad)}")
        return None

    def __call__(self, graph: Graph, node: Node) -> Kernel:
        return self.fn(graph, node)


LOWERINGS: FactTable[Lowering] = FactTable(
    "lowering", known=lambda op: op in OPS, known_hint="Define the op in infopt.ir.ops first.")


def lowering(*ops: str, dtypes: Sequence[str] = FLOATS, replace: bool = False) -> Callable[[LowerFn], LowerFn]:
    """Register the decorated function as the lowering of each of ``ops`` for ``dtypes``; returns it unchanged."""
    def register(fn: LowerFn) -> LowerFn:
        LOWERINGS.register_all(ops, Lowering(fn, tuple(dtypes)), replace)
        return fn
    return register
