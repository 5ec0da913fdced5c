"""Chapters 1-2 of the tutorial, condensed: a parser for a small Toy language and the code that emits Toy IR.

    def main() {
      var a = [[1, 2, 3], [4, 5, 6]];
      var b<3, 2> = [1, 2, 3, 4, 5, 6];       # a shaped declaration is a toy.reshape
      print(transpose(a) * b);
    }

Only `main` (no other functions, so the tutorial's inliner of chapter 4 has nothing to do), `var`, array literals,
`transpose(...)`, `reshape`-by-declaration, `+`, `*`, parentheses and `print`.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

_TOKEN = re.compile(r"\s*(?:(#.*)|(-?\d+(?:\.\d*)?)|([A-Za-z_]\w*)|(\S))")


class ToySyntaxError(ValueError):
    """The Toy source does not parse; the message names the line and what was expected."""


def tokens(src: str) -> list[tuple[str, int]]:
    """(token, line) pairs, comments dropped."""
    out = []
    for lineno, line in enumerate(src.splitlines(), 1):
        for m in _TOKEN.finditer(line.split("#")[0]):
            tok = next((g for g in m.groups()[1:] if g is not None), None)
            if tok is not None:
                out.append((tok, lineno))
    return out


class _Parser:
    def __init__(self, src: str) -> None:
        self.toks = tokens(src)
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i][0] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> str:
        if self.i >= len(self.toks):
            raise ToySyntaxError(f"unexpected end of the program{f' (expected {want!r})' if want else ''}")
        tok, line = self.toks[self.i]
        if want is not None and tok != want:
            raise ToySyntaxError(f"line {line}: expected {want!r}, got {tok!r}")
        self.i += 1
        return tok

    def program(self) -> list:
        self.take("def"), self.take("main"), self.take("("), self.take(")"), self.take("{")
        body = []
        while self.peek() != "}":
            body.append(self.statement())
        self.take("}")
        return body

    def statement(self):
        if self.peek() == "var":
            self.take("var")
            name = self.take()
            shape = None
            if self.peek() == "<":
                self.take("<")
                shape = [int(self.take())]
                while self.peek() == ",":
                    self.take(",")
                    shape.append(int(self.take()))
                self.take(">")
            self.take("=")
            expr = self.expr()
            self.take(";")
            return ("var", name, tuple(shape) if shape else None, expr)
        if self.peek() == "print":
            self.take("print"), self.take("(")
            expr = self.expr()
            self.take(")"), self.take(";")
            return ("print", expr)
        raise ToySyntaxError(f"line {self.toks[self.i][1]}: expected 'var' or 'print', got {self.peek()!r}")

    def expr(self):
        left = self.term()
        while self.peek() == "+":
            self.take("+")
            left = ("add", left, self.term())
        return left

    def term(self):
        left = self.atom()
        while self.peek() == "*":
            self.take("*")
            left = ("mul", left, self.atom())
        return left

    def atom(self):
        tok = self.peek()
        if tok == "(":
            self.take("(")
            e = self.expr()
            self.take(")")
            return e
        if tok == "[":
            return ("literal", np.asarray(self.literal(), dtype=np.float64))
        if tok == "transpose":
            self.take("transpose"), self.take("(")
            e = self.expr()
            self.take(")")
            return ("transpose", e)
        if re.fullmatch(r"[A-Za-z_]\w*", tok or ""):
            return ("ref", self.take())
        raise ToySyntaxError(f"line {self.toks[self.i][1] if self.i < len(self.toks) else '?'}: "
                             f"expected an expression, got {tok!r}")

    def literal(self):
        self.take("[")
        items = [self.literal() if self.peek() == "[" else float(self.take())]
        while self.peek() == ",":
            self.take(",")
            items.append(self.literal() if self.peek() == "[" else float(self.take()))
        self.take("]")
        return items


def parse_toy(src: str) -> list:
    """The program's statements as a small AST: ("var", name, shape, expr) and ("print", expr)."""
    return _Parser(src).program()


def emit_toy(src: str) -> Any:
    """Toy source -> an xDSL module holding `func.func @main` in the Toy dialect (unranked where unknown)."""
    from xdsl.builder import Builder
    from xdsl.dialects import func
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, f64
    from xdsl.ir import Block, Region
    from xdsl.rewriter import InsertPoint

    from .dialect import AddOp, ConstantOp, MulOp, PrintOp, ReshapeOp, TransposeOp

    block = Block()
    b = Builder(InsertPoint.at_end(block))
    env: dict[str, Any] = {}

    def gen(e):
        kind = e[0]
        if kind == "literal":
            arr = e[1]
            attr = DenseIntOrFPElementsAttr.from_list(TensorType(f64, list(arr.shape)), arr.reshape(-1).tolist())
            return b.insert(ConstantOp(attr)).res
        if kind == "ref":
            if e[1] not in env:
                raise ToySyntaxError(f"unknown variable {e[1]!r}")
            return env[e[1]]
        if kind == "transpose":
            return b.insert(TransposeOp(gen(e[1]))).res
        op = AddOp if kind == "add" else MulOp
        return b.insert(op(gen(e[1]), gen(e[2]))).res

    for st in parse_toy(src):
        if st[0] == "var":
            v = gen(st[3])
            env[st[1]] = b.insert(ReshapeOp(v, st[2])).res if st[2] else v
        else:
            b.insert(PrintOp(gen(st[1])))
    b.insert(func.ReturnOp())
    main = func.FuncOp("main", ((), ()), Region(block))
    return ModuleOp([main])
