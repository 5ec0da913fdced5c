"""Generic traversals of the kernel IR: substitute variables, map statements, find loops and scalars.

Schedules (unit 06) are built from these: ``split`` substitutes ``i -> io*f + ii`` in a loop body,
``reorder`` rebuilds a perfect nest, ``unroll``/``vectorize``/``parallel`` replace a loop's ``kind``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator, Mapping

from .kernel_ir import (
    Assign, Bin, BitCast, Body, Call, Cast, Cmp, Expr, If, Kernel, KernelError, Load, Loop, Select, Stmt, Store, Var,
)


def substitute(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """``e`` with every ``Var`` named in ``mapping`` replaced by its expression."""
    if isinstance(e, Var):
        return mapping.get(e.name, e)
    if isinstance(e, Load):
        return Load(e.buffer, tuple(substitute(i, mapping) for i in e.indices))
    if isinstance(e, (Bin, Cmp)):
        return type(e)(e.op, substitute(e.a, mapping), substitute(e.b, mapping))
    if isinstance(e, Select):
        return Select(substitute(e.cond, mapping), substitute(e.a, mapping), substitute(e.b, mapping))
    if isinstance(e, Call):
        return Call(e.fn, tuple(substitute(a, mapping) for a in e.args))
    if isinstance(e, (Cast, BitCast)):
        return type(e)(e.to, substitute(e.a, mapping))
    return e


def substitute_stmt(s: Stmt, mapping: Mapping[str, Expr]) -> Stmt:
    """A statement with variables substituted everywhere inside it (bounds, indices, values, bodies)."""
    if isinstance(s, Store):
        return Store(s.buffer, tuple(substitute(i, mapping) for i in s.indices), substitute(s.value, mapping))
    if isinstance(s, Assign):
        return Assign(s.var, substitute(s.value, mapping))
    if isinstance(s, Loop):
        inner = {k: v for k, v in mapping.items() if k != s.var.name}
        return replace(s, start=substitute(s.start, mapping), stop=substitute(s.stop, mapping),
                       body=tuple(substitute_stmt(b, inner) for b in s.body))
    if isinstance(s, If):
        return If(substitute(s.cond, mapping), tuple(substitute_stmt(b, mapping) for b in s.then),
                  tuple(substitute_stmt(b, mapping) for b in s.orelse))
    raise KernelError(f"cannot substitute into {s!r}")


def map_loops(body: Body, fn: Callable[[Loop], Stmt | Body]) -> Body:
    """Rebuild ``body`` bottom-up, replacing every Loop by ``fn(loop)`` (a statement or a tuple of statements)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Loop):
            new = fn(replace(s, body=map_loops(s.body, fn)))
            out.extend(new if isinstance(new, tuple) else (new,))
        elif isinstance(s, If):
            out.append(If(s.cond, map_loops(s.then, fn), map_loops(s.orelse, fn)))
        else:
            out.append(s)
    return tuple(out)


def iter_stmts(body: Body) -> Iterator[Stmt]:
    """Every statement, pre-order (a loop before its body)."""
    for s in body:
        yield s
        if isinstance(s, Loop):
            yield from iter_stmts(s.body)
        elif isinstance(s, If):
            yield from iter_stmts(s.then)
            yield from iter_stmts(s.orelse)


def find_loop(kernel: Kernel, var: str) -> Loop:
    """The loop over ``var``, or a KernelError listing the loop variables there are."""
    loops = [s for s in iter_stmts(kernel.body) if isinstance(s, Loop)]
    for s in loops:
        if s.var.name == var:
            return s
    raise KernelError(f"kernel {kernel.name} has no loop over {var!r}; loops: {[s.var.name for s in loops]}")


def assigned_scalars(body: Body) -> list[Var]:
    """The local scalars a body assigns, in first-assignment order."""
    seen: dict[str, Var] = {}
    for s in iter_stmts(body):
        if isinstance(s, Assign) and s.var.name not in seen:
            seen[s.var.name] = s.var
    return list(seen.values())
