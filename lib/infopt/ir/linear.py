"""The linearized view of a Graph: its nodes as an execution-order list whose sources are list positions.

This is the form tinygrad schedules and lowers (a list of ops, each reading earlier entries by index).
A source is ``int`` (output 0 of entry i), ``(i, k)`` (output k of entry i), ``str`` (a graph input or
constant, by name) or None (an absent optional input).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

import numpy as np

from .errors import GraphError
from .graph import Graph
from .node import Node
from .opset import DEFAULT_OPSET
from .types import TensorType

Src = Union[int, tuple[int, int], str, None]


@dataclass
class LinearOp:
    """One entry of the execution-order list: ``op`` applied to ``srcs``, producing values of ``types``.

    ``outputs`` keeps the original value names and ``name`` the node name, so the graph can be rebuilt.
    """

    index: int
    op: str
    srcs: tuple[Src, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    types: tuple[TensorType | None, ...] = ()
    outputs: tuple[str, ...] = ()
    name: str = ""

    @property
    def type(self) -> TensorType | None:
        """The type of the first (usually only) output."""
        return self.types[0] if self.types else None

    def __str__(self) -> str:
        t = ", ".join(str(t) for t in self.types if t is not None)
        text = f"{self.index}: {self.op}({', '.join(_src_text(s) for s in self.srcs)})"
        if self.attrs:
            text += " {" + ", ".join(f"{k}={_short(v)}" for k, v in self.attrs.items()) + "}"
        return text + (f" -> {t}" if t else "")


class LinearProgram(list):
    """A list of LinearOps that also remembers the graph's name, typed inputs, outputs, constants and opset,
    so ``from_linear(program)`` needs nothing else."""

    def __init__(self, ops: Sequence[LinearOp] = (), name: str = "graph",
                 inputs: Mapping[str, TensorType] | None = None, outputs: Sequence[Src] = (),
                 initializers: Mapping[str, np.ndarray] | None = None, opset: int = DEFAULT_OPSET) -> None:
        super().__init__(ops)
        self.name = name
        self.opset = int(opset)
        self.inputs: dict[str, TensorType] = dict(inputs or {})
        self.outputs: list[Src] = list(outputs)
        self.initializers: dict[str, np.ndarray] = dict(initializers or {})


def to_linear(graph: Graph) -> LinearProgram:
    """The graph's nodes in topological order, each source an index into the list or an input/constant name.

    The result is a list of LinearOp (a LinearProgram, which also keeps the graph's inputs, outputs and
    constants); graph outputs are kept by value name."""
    where: dict[str, Src] = {}
    ops: list[LinearOp] = []
    for k, node in enumerate(graph.toposort()):
        srcs: list[Src] = []
        for name in node.inputs:
            if not name:
                srcs.append(None)
            elif name in where:
                srcs.append(where[name])
            elif name in graph.inputs or name in graph.initializers:
                srcs.append(name)
            else:
                raise GraphError(f"node {node.label} reads %{name}, which is neither defined by a node nor a "
                                 "graph input or constant")
        for j, out in enumerate(node.outputs):
            where[out] = k if j == 0 else (k, j)
        ops.append(LinearOp(k, node.op, tuple(srcs), dict(node.attrs),
                            tuple(graph.types.get(o) for o in node.outputs), tuple(node.outputs), node.name))
    return LinearProgram(ops, graph.name, {i: graph.types[i] for i in graph.inputs if i in graph.types},
                         list(graph.outputs), graph.initializers, graph.opset)


def _value_name(ops: Sequence[LinearOp], i: int, k: int) -> str:
    op = ops[i]
    if k < len(op.outputs) and op.outputs[k]:
        return op.outputs[k]
    return f"v{i}" if k == 0 else f"v{i}_{k}"


def _resolve(ops: Sequence[LinearOp], src: Src, at: int, known: set[str]) -> str:
    """The value name a source refers to, checking that index sources point to earlier entries."""
    if src is None:
        return ""
    if isinstance(src, str):
        if src not in known:
            raise GraphError(f"linear op {at} ({ops[at].op}) reads %{src}, which is not a graph input or constant")
        return src
    i, k = (src, 0) if isinstance(src, (int, np.integer)) else src
    if not 0 <= i < at:
        raise GraphError(f"linear op {at} ({ops[at].op}) reads entry {i}, which does not come before it "
                         "(sources must point to earlier entries)")
    n_out = max(len(ops[i].outputs), len(ops[i].types), 1)
    if not 0 <= k < n_out:
        raise GraphError(f"linear op {at} ({ops[at].op}) reads output {k} of entry {i}, which has {n_out}")
    return _value_name(ops, i, k)


def from_linear(
    ops: Sequence[LinearOp],
    inputs: Mapping[str, TensorType] | None = None,
    outputs: Sequence[Src] | None = None,
    initializers: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
) -> Graph:
    """The Graph of an execution-order list; ``outputs`` are sources (entry indices or value names).

    Arguments left out come from a LinearProgram (what ``to_linear`` returns). For a plain list, the
    inputs are the names read that are not constants (untyped), and the outputs the values nobody reads.
    """
    prog = ops if isinstance(ops, LinearProgram) else None
    initializers = dict(initializers if initializers is not None else prog.initializers if prog else {})
    name = name if name is not None else prog.name if prog else "graph"
    if inputs is None:
        if prog is not None:
            inputs = prog.inputs
        else:
            read = dict.fromkeys(s for op in ops for s in op.srcs if isinstance(s, str) and s not in initializers)
            inputs = dict.fromkeys(read)  # names only: their types are unknown
    g = Graph(name, initializers=initializers, opset=prog.opset if prog is not None else DEFAULT_OPSET)
    for i, t in inputs.items():
        g.inputs.append(i)
        if t is not None:
            g.types[i] = t
    known = set(inputs) | set(initializers)
    if outputs is None:
        if prog is not None:
            outputs = prog.outputs
        else:
            read_idx = {(s, 0) if isinstance(s, (int, np.integer)) else s for op in ops for s in op.srcs
                        if isinstance(s, (int, np.integer, tuple))}
            outputs = [(op.index, k) for op in ops for k in range(max(len(op.outputs), len(op.types), 1))
                       if (op.index, k) not in read_idx]
    for at, op in enumerate(ops):
        if op.index != at:
            raise GraphError(f"linear op at position {at} says index {op.index}; entries must be numbered 0, 1, ...")
        ins = [_resolve(ops, s, at, known) for s in op.srcs]
        n_out = max(len(op.outputs), len(op.types), 1)
        outs = [_value_name(ops, at, k) for k in range(n_out)]
        g.nodes.append(Node(op.op, ins, outs, dict(op.attrs), op.name))
        for o, t in zip(outs, op.types):
            if t is not None:
                g.types[o] = t
    produced = {v for op in ops for v in op.outputs} | known
    for s in outputs:
        if isinstance(s, str):
            if s not in produced:
                raise GraphError(f"graph output %{s} is not produced by any linear op nor an input or constant")
            g.outputs.append(s)
            continue
        i, k = (s, 0) if isinstance(s, (int, np.integer)) else s
        if not 0 <= i < len(ops):
            raise GraphError(f"graph output refers to entry {i}, but the list has {len(ops)} entries")
        g.outputs.append(_value_name(ops, i, k))
    return g


def _src_text(s: Src) -> str:
    if s is None:
        return "none"
    if isinstance(s, str):
        return "%" + s
    if isinstance(s, tuple):
        return f"{s[0]}.{s[1]}"
    return str(s)


def format_linear(ops: Sequence[LinearOp], attrs: bool = True) -> str:
    """A table of the list, one entry per line: index, op, output type, sources (and attributes)."""
    rows = []
    for op in ops:
        t = ", ".join(str(t) for t in op.types if t is not None)
        line = f"{op.index:4d}  {op.op:<20s} {t:<28s} ({', '.join(_src_text(s) for s in op.srcs)})"
        if attrs and op.attrs:
            line += "  {" + ", ".join(f"{k}={_short(v)}" for k, v in op.attrs.items()) + "}"
        rows.append(line.rstrip())
    return "\n".join(rows)


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"<{TensorType.of(v)}>"
    return repr(v) if not isinstance(v, list) else "[" + ", ".join(_short(x) for x in v) + "]"
