"""The text form of a Graph: MLIR-like, one SSA line per node, and a parser back (exact round trip).

    graph @tiny(%x: f32[1,3,8,8] NCHW) -> (%y) {
      %w = const f32[4,3,3,3]
      %b = const f32[4] [0.1, -0.2, 0.3, 0.0]
      %c: f32[1,4,8,8] NCHW = Conv(%x, %w, %b) {pads=[1,1,1,1]} loc("conv1")
      %y: f32[1,4,8,8] NCHW = Relu(%c) loc("relu1")
    }

Constants with more than ``max_inline`` elements are elided (``%w = const f32[4,3,3,3]``); the parser takes
their values from ``constants``. Array attributes (Constant's ``value``) print as ``dense<f32[2] [1.0, 2.0]>``,
elided ones as ``dense<f32[64,64]>``, looked up in ``constants`` under the node's first output name.
Attribute values: ints, floats (always with '.', 'e', inf or nan), "strings", true/false, none,
[lists], {key=value} dicts and dense<...> arrays. Value names that are not plain identifiers are quoted: ``%"onnx::Conv_12"``. An absent optional input
prints as ``none``. A graph whose opset is not the default (17) says so in its header: ``-> (%y) opset 18 {``.

``to_text`` lives in ``infopt.ir.printer`` (re-exported here); this module parses.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator, Mapping

import numpy as np

from .errors import GraphError
from .graph import Graph
from .node import Node
from .printer import to_text
from .types import DTYPES, LAYOUTS, TensorType, dtype_name, is_float

__all__ = ["parse_text", "to_text"]

# ----- parsing -----------------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<sym>[%@])(?P<sname>"(?:[^"\\]|\\.)*"|[A-Za-z0-9_.$\-/]+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan))(?![A-Za-z0-9_])
  | (?P<arrow>->)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()\[\]{},:=<>])
""", re.VERBOSE)


class _Line:
    """A cursor over one line's tokens that reports errors with the line number and what was expected."""

    def __init__(self, text: str, lineno: int) -> None:
        self.lineno, self.text = lineno, text
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text.startswith("//", pos):
                break
            m = _TOKEN.match(text, pos)
            if not m:
                self.fail(f"an IR token at column {pos + 1}", repr(text[pos:pos + 12]))
            pos = m.end()
            kind = m.lastgroup
            if kind == "ws":
                continue
            if kind == "sname":
                raw = m.group("sname")
                self.toks.append((m.group("sym"), json.loads(raw) if raw.startswith('"') else raw))
            elif kind == "str":
                self.toks.append(("str", json.loads(m.group("str"))))
            else:
                self.toks.append((kind, m.group(kind)))
        self.k = 0

    def fail(self, expected: str, found: str | None = None) -> None:
        if found is None:
            found = repr(self.toks[self.k][1]) if self.k < len(self.toks) else "the end of the line"
        raise GraphError(f"line {self.lineno}: expected {expected}, found {found}\n  {self.lineno} | {self.text}")

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        if self.k >= len(self.toks):
            return False
        tk, tv = self.toks[self.k]
        return (value is None or tv == value and tk in ("punct", "arrow", "ident")) and (kind is None or tk == kind)

    def take(self, value: str | None = None, kind: str | None = None, what: str | None = None) -> str:
        if not self.peek(value, kind):
            self.fail(what or (repr(value) if value else kind))
        self.k += 1
        return self.toks[self.k - 1][1]

    def done(self) -> None:
        if self.k != len(self.toks):
            self.fail("the end of the line")


def _parse_type(c: _Line) -> TensorType:
    dt = c.take(kind="ident", what=f"a dtype ({', '.join(DTYPES)})")
    if dt not in DTYPES:
        c.k -= 1
        c.fail(f"a dtype ({', '.join(DTYPES)})")
    c.take("[")
    dims: list[int] = []
    while not c.peek("]"):
        d = c.take(kind="num", what="a dimension (non-negative int)")
        if not d.isdigit():
            c.k -= 1
            c.fail("a dimension (non-negative int)")
        dims.append(int(d))
        if not c.peek("]"):
            c.take(",", what="',' or ']'")
    c.take("]")
    layout = None
    if c.peek(kind="ident") and c.toks[c.k][1] in LAYOUTS:
        layout = c.take()
    return TensorType(tuple(dims), dt, layout)


def _parse_data(c: _Line, t: TensorType) -> np.ndarray:
    c.take("[")
    vals: list[str] = []
    while not c.peek("]"):
        if c.peek(kind="ident") and c.toks[c.k][1] in ("true", "false"):
            vals.append("1" if c.take() == "true" else "0")
        else:
            vals.append(c.take(kind="num", what="a number"))
        if not c.peek("]"):
            c.take(",", what="',' or ']'")
    c.take("]")
    if len(vals) != t.size:
        c.fail(f"{t.size} values for {t}", f"{len(vals)}")
    nd = t.numpy_dtype
    if is_float(nd) or nd.kind == "b":
        arr = np.array([float(v) for v in vals]).astype(nd)
    else:
        arr = np.array([int(v) for v in vals], dtype=nd)
    return arr.reshape(t.shape)


def _parse_attr(c: _Line, key: str, out_name: str, constants: Mapping[str, np.ndarray]) -> Any:
    if c.peek("["):
        c.take("[")
        items = []
        while not c.peek("]"):
            items.append(_parse_attr(c, key, out_name, constants))
            if not c.peek("]"):
                c.take(",", what="',' or ']'")
        c.take("]")
        return items
    if c.peek("dense"):
        c.take("dense")
        c.take("<")
        t = _parse_type(c)
        if c.peek("["):
            v = _parse_data(c, t)
        else:
            if out_name not in constants:
                raise GraphError(f"line {c.lineno}: attribute {key} of the node defining %{out_name} is elided "
                                 f"({t}); pass its value as constants[{out_name!r}]")
            v = np.asarray(constants[out_name])
            if TensorType.of(v).shape != t.shape or TensorType.of(v).dtype != t.dtype:
                raise GraphError(f"line {c.lineno}: constants[{out_name!r}] is {TensorType.of(v)} but the text "
                                 f"says {t}")
        c.take(">")
        return v
    if c.peek("{"):
        c.take("{")
        items: dict[str, Any] = {}
        while not c.peek("}"):
            k = c.take(kind="str") if c.peek(kind="str") else c.take(kind="ident", what="a key")
            c.take("=", what="'=' after the key")
            items[k] = _parse_attr(c, key, out_name, constants)
            if not c.peek("}"):
                c.take(",", what="',' or '}'")
        c.take("}")
        return items
    if c.peek("true") or c.peek("false"):
        return c.take() == "true"
    if c.peek("none"):
        c.take()
        return None
    if c.peek(kind="str"):
        return c.take()
    num = c.take(kind="num", what="an attribute value (number, string, list or dense<...>)")
    return int(num) if re.fullmatch(r"[-+]?\d+", num) else float(num)


def _lines(text: str) -> Iterator[_Line]:
    for k, raw in enumerate(text.splitlines(), 1):
        c = _Line(raw, k)
        if c.toks:
            yield c


def parse_text(text: str, constants: Mapping[str, np.ndarray] | None = None) -> Graph:
    """The Graph that ``to_text`` printed; elided constants come from ``constants`` (by value name)."""
    constants = dict(constants or {})
    lines = list(_lines(text))
    if not lines:
        raise GraphError("line 1: expected a 'graph @name(...) -> (...) {' header, found an empty text")
    c = lines[0]
    c.take("graph", what="'graph'")
    g = Graph(c.take(kind="@", what="the graph name @name"))
    c.take("(")
    while not c.peek(")"):
        name = c.take(kind="%", what="an input %name")
        c.take(":", what="':' and the input's type")
        g.add_input(name, _parse_type(c))
        if not c.peek(")"):
            c.take(",", what="',' or ')'")
    c.take(")")
    c.take("->", what="'->'")
    c.take("(")
    while not c.peek(")"):
        g.outputs.append(c.take(kind="%", what="an output %name"))
        if not c.peek(")"):
            c.take(",", what="',' or ')'")
    c.take(")")
    if c.peek("opset"):
        c.take("opset")
        v = c.take(kind="num", what="the opset (an int)")
        if not v.isdigit():
            c.k -= 1
            c.fail("the opset (an int)")
        g.opset = int(v)
    c.take("{")
    c.done()
    closed = False
    for c in lines[1:]:
        if closed:
            c.fail("nothing after the closing '}'")
        if c.peek("}"):
            c.take("}")
            c.done()
            closed = True
            continue
        outs: list[str] = []
        types: dict[str, TensorType] = {}
        while True:
            outs.append(c.take(kind="%", what="a value %name"))
            if c.peek(":"):
                c.take(":")
                types[outs[-1]] = _parse_type(c)
            if not c.peek(","):
                break
            c.take(",")
        c.take("=", what="'='")
        if c.peek("const"):
            c.take("const")
            if len(outs) != 1 or types:
                c.fail("one untyped name before '= const'", f"{', '.join('%' + o for o in outs)}")
            t = _parse_type(c)
            if c.peek("["):
                value = _parse_data(c, t)
            elif outs[0] in constants:
                value = np.asarray(constants[outs[0]])
                if value.shape != t.shape or dtype_name(value.dtype) != t.dtype:
                    raise GraphError(f"line {c.lineno}: constants[{outs[0]!r}] is {TensorType.of(value)} but the "
                                     f"text declares {t}")
            else:
                raise GraphError(f"line {c.lineno}: constant %{outs[0]} ({t}) is elided in the text; pass its "
                                 f"value as constants[{outs[0]!r}] (e.g. parse_text(text, graph.initializers))")
            c.done()
            g.initializers[outs[0]] = value
            g.types[outs[0]] = t
            continue
        op = c.take(kind="ident", what="an op name")
        c.take("(")
        ins: list[str] = []
        while not c.peek(")"):
            if c.peek("none"):
                c.take()
                ins.append("")
            else:
                ins.append(c.take(kind="%", what="an input %name or none"))
            if not c.peek(")"):
                c.take(",", what="',' or ')'")
        c.take(")")
        attrs: dict[str, Any] = {}
        if c.peek("{"):
            c.take("{")
            while not c.peek("}"):
                key = c.take(kind="str") if c.peek(kind="str") else c.take(kind="ident", what="an attribute name")
                c.take("=", what="'=' after the attribute name")
                attrs[key] = _parse_attr(c, key, outs[0], constants)
                if not c.peek("}"):
                    c.take(",", what="',' or '}'")
            c.take("}")
        name = ""
        if c.peek("loc"):
            c.take("loc")
            c.take("(")
            name = c.take(kind="str", what='a quoted node name loc("...")')
            c.take(")")
        c.done()
        g.nodes.append(Node(op, ins, outs, attrs, name))
        g.types.update(types)
    if not closed:
        raise GraphError(f"line {lines[-1].lineno + 1}: expected the closing '}}' of graph @{g.name}, found the end "
                         "of the text")
    return g
