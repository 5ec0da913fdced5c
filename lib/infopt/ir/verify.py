"""The verifier: checks that a Graph is well formed SSA with consistent types, naming the node and value at fault.

``check(graph)`` lists every problem (for teaching: see them all at once); ``verify(graph)`` raises a
GraphError on the first. ``graph_diff(a, b)`` compares two graphs structurally (round-trip tests use it).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import GraphError, UnsupportedOpError
from .graph import Graph
from .node import Node
from .ops import get_op, infer_node
from .types import TensorType


def _where(node: Node) -> str:
    return f"node {node.label}"


def _definitions(graph: Graph, problems: list[str]) -> dict[str, Any]:
    """Map value -> its definer ('input', 'initializer' or the Node); reports values defined twice."""
    defined: dict[str, Any] = {}

    def who(d: Any) -> str:
        return d if isinstance(d, str) else _where(d)

    def define(name: str, by: Any) -> None:
        if not name:
            problems.append(f"{who(by)} defines a value with an empty name; give every output a name")
        elif name in defined:
            problems.append(f"value %{name} is defined twice: by {who(defined[name])} and by {who(by)} "
                            "(SSA: each value has exactly one definition; rename one of them)")
        else:
            defined[name] = by

    for name in graph.inputs:
        define(name, "graph input")
    for name in graph.initializers:
        define(name, "initializer")
    for node in graph.nodes:
        for out in node.outputs:
            if out:  # an empty name is an absent optional output (ONNX's convention)
                define(out, node)
    return defined


def check(graph: Graph) -> list[str]:
    """Every problem with ``graph`` as a message naming the node and value: single definition, use before
    definition, dangling uses, undefined outputs, cycles, unknown ops, input arity and type consistency."""
    problems: list[str] = []
    defined = _definitions(graph, problems)
    position = {id(n): k for k, n in enumerate(graph.nodes)}

    # Cycles first: they explain the use-before-definition reports that follow them.
    cyclic = False
    try:
        graph.toposort()
    except GraphError as e:
        cyclic = True
        problems.append(str(e))

    structurally_ok: list[Node] = []
    for k, node in enumerate(graph.nodes):
        ok = True
        try:
            opdef = get_op(node.op, node)
        except UnsupportedOpError as e:
            problems.append(str(e).split(";")[0] + "; register it or replace the node")
            opdef, ok = None, False
        if opdef is not None:
            lo, hi = opdef.num_inputs
            if not lo <= len(node.inputs) <= hi:
                problems.append(f"{_where(node)}: {node.op} takes {lo}..{hi} inputs, got {len(node.inputs)} "
                                f"({', '.join('%' + i for i in node.inputs)})")
                ok = False
        for name in node.inputs:
            if not name:
                continue
            d = defined.get(name)
            if d is None:
                problems.append(f"{_where(node)} uses value %{name}, which is never defined (dangling use)")
                ok = False
            elif isinstance(d, Node) and position[id(d)] >= k:
                what = "its own output" if d is node else f"defined later by node {d.label}"
                kind = "a cycle" if cyclic else "use before definition"
                problems.append(f"{_where(node)} uses value %{name} before its definition ({what}; {kind})")
                ok = False
        if ok:
            structurally_ok.append(node)

    for name in graph.outputs:
        if name not in defined:
            problems.append(f"graph output %{name} is never defined")

    # Types: declared for inputs, matching for constants, and equal to re-inference for node outputs.
    for name in graph.inputs:
        if name not in graph.types:
            problems.append(f"graph input %{name} has no declared type")
    for name, value in graph.initializers.items():
        t = graph.types.get(name)
        actual = TensorType.of(np.asarray(value))
        if t is None or (t.shape, t.dtype) != (actual.shape, actual.dtype):
            problems.append(f"initializer %{name}: stored type {t} but its value is {actual}")
    for node in structurally_ok:
        if any(i and i not in graph.types for i in node.inputs):
            continue  # the missing type is reported where that value is defined
        try:
            inferred = infer_node(graph, node)
        except GraphError as e:
            problems.append(str(e))
            continue
        for out, t in zip(node.outputs, inferred):
            if not out:
                continue
            stored = graph.types.get(out)
            if stored is None:
                problems.append(f"{_where(node)}: output %{out} has no type (inference gives {t})")
            elif stored != t:
                problems.append(f"{_where(node)}: output %{out} is stored as {stored} but inference gives {t}")
    return problems


def verify(graph: Graph) -> None:
    """Raise a GraphError naming the node and value of the first problem ``check`` finds (None if well formed)."""
    problems = check(graph)
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''}; see check(graph))" \
            if len(problems) > 1 else ""
        raise GraphError(f"graph {graph.name!r}: {problems[0]}{more}")


def _kind(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    return type(v).__name__


def _same_attr(a: Any, b: Any) -> bool:
    """Attribute equality that tells ints from floats, lists match tuples, NaN equals NaN, arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_attr(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_attr(a[k], b[k]) for k in a)
    if _kind(a) != _kind(b):
        return False
    if _kind(a) == "float" and a != a:
        return b != b
    return bool(a == b)


def graph_diff(a: Graph, b: Graph) -> list[str]:
    """The structural differences between two graphs (empty when they are equal): name, inputs, outputs, opset,
    nodes in order (op, inputs, outputs, attrs, name), constants (dtype, shape, values) and value types."""
    diffs: list[str] = []
    for field in ("name", "inputs", "outputs", "opset"):
        if getattr(a, field, None) != getattr(b, field, None):
            diffs.append(f"{field}: {getattr(a, field)!r} != {getattr(b, field)!r}")
    if len(a.nodes) != len(b.nodes):
        diffs.append(f"node count: {len(a.nodes)} != {len(b.nodes)}")
    for k, (x, y) in enumerate(zip(a.nodes, b.nodes)):
        for field in ("op", "inputs", "outputs", "name"):
            if getattr(x, field) != getattr(y, field):
                diffs.append(f"node {k} ({x.label}) {field}: {getattr(x, field)!r} != {getattr(y, field)!r}")
        if x.attrs.keys() != y.attrs.keys() or not all(_same_attr(x.attrs[n], y.attrs[n]) for n in x.attrs):
            diffs.append(f"node {k} ({x.label}) attrs: {x.attrs!r} != {y.attrs!r}")
    if a.initializers.keys() != b.initializers.keys():
        diffs.append(f"constants: {sorted(a.initializers)} != {sorted(b.initializers)}")
    for name in a.initializers.keys() & b.initializers.keys():
        if not _same_attr(np.asarray(a.initializers[name]), np.asarray(b.initializers[name])):
            diffs.append(f"constant %{name} differs")
    names = a.value_names() | b.value_names()
    for name in sorted(names):
        if a.types.get(name) != b.types.get(name):
            diffs.append(f"type of %{name}: {a.types.get(name)} != {b.types.get(name)}")
    return diffs
