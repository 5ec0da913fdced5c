"""Printing a Graph as text: MLIR-like, one SSA line per node (``infopt.ir.text`` parses it back).

See ``infopt.ir.text`` for the format. It reads graphs through ``infopt.ir.protocols.GraphLike``, so graph.py
can print itself (``str(graph)``) without importing the parser.
"""
from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from .errors import GraphError
from .node import Node
from .opset import DEFAULT_OPSET
from .protocols import GraphLike
from .types import TensorType, is_float

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.$\-/]*$|^[0-9]+$")


def _name(sigil: str, name: str) -> str:
    return sigil + (name if _PLAIN.match(name) else json.dumps(name))


def _scalar(v: Any, dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "true" if v else "false"
    if is_float(dtype):
        return str(dtype.type(v))  # shortest string that round-trips in this precision
    return str(int(v))


def _data(value: np.ndarray) -> str:
    return "[" + ", ".join(_scalar(v, value.dtype) for v in value.reshape(-1)) + "]"


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) and k not in ("true", "false", "none", "dense") \
        else json.dumps(k)


def _attr(v: Any, key: str, node: Node, max_inline: int) -> str:
    if isinstance(v, np.ndarray):
        t = TensorType.of(v)
        return f"dense<{t} {_data(v)}>" if v.size <= max_inline else f"dense<{t}>"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # always holds '.', 'e', 'inf' or 'nan', so it reads back as a float
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x, key, node, max_inline) for x in v) + "]"
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return "{" + ", ".join(f"{_key(k)}={_attr(x, key, node, max_inline)}" for k, x in v.items()) + "}"
    if v is None:
        return "none"
    raise GraphError(f"node {node.label}: attribute {key}={v!r} of type {type(v).__name__} has no text form "
                     "(use int, float, str, None, lists and str-keyed dicts of them, or a numpy array)")


def to_text(graph: GraphLike, max_inline: int = 16) -> str:
    """The graph as MLIR-like text: a header with typed inputs and outputs, constants, one line per node."""
    def typed(name: str) -> str:
        t = graph.types.get(name)
        return _name("%", name) + (f": {t}" if t is not None else "")

    opset = getattr(graph, "opset", DEFAULT_OPSET)
    lines = [f"graph {_name('@', graph.name)}({', '.join(typed(i) for i in graph.inputs)}) -> "
             f"({', '.join(_name('%', o) for o in graph.outputs)}){f' opset {opset}' if opset != DEFAULT_OPSET else ''} {{"]
    for name, value in graph.initializers.items():
        value = np.asarray(value)
        t = graph.types.get(name) or TensorType.of(value)
        data = f" {_data(value)}" if value.size <= max_inline else ""
        lines.append(f"  {_name('%', name)} = const {t}{data}")
    for node in graph.nodes:
        ins = ", ".join(_name("%", i) if i else "none" for i in node.inputs)
        line = f"  {', '.join(typed(o) for o in node.outputs)} = {node.op}({ins})"
        if node.attrs:
            line += " {" + ", ".join(f"{_key(k)}={_attr(v, k, node, max_inline)}" for k, v in node.attrs.items()) + "}"
        if node.name:
            line += f" loc({json.dumps(node.name)})"
        lines.append(line)
    lines.append("}")
    return "\n".join(lines)
