"""Memory accesses of a loop nest: affine index forms, reads and writes per buffer, reduction variables.

Schedule primitives (``infopt.codegen.schedule``) use these to decide legality. The test is the
classic conservative one for the loop nests of unit 06: a statement group may be reordered or
fused when every buffer it writes is read and written at one index tuple only (each iteration owns
its element); loop variables absent from those written indices are *reduction* variables, whose
relative order decides the floating-point summation order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .kernel_ir import Assign, Bin, Body, Const, Expr, If, Load, Loop, Store, Var, INT_DTYPES
from .printer import expr_text
from .rewrite import iter_stmts
from .verify import iter_exprs

Affine = dict[str, int]  # variable name -> coefficient; key "" holds the constant


def affine(e: Expr) -> Affine | None:
    """``e`` as {var: coefficient, "": constant} when it is affine in integer variables, else None."""
    if isinstance(e, Const) and e.dtype in INT_DTYPES:
        return {"": int(e.value)}
    if isinstance(e, Var) and e.dtype in INT_DTYPES:
        return {e.name: 1}
    if isinstance(e, Bin) and e.op in ("+", "-"):
        a, b = affine(e.a), affine(e.b)
        if a is None or b is None:
            return None
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + (v if e.op == "+" else -v)
        return {k: v for k, v in out.items() if v != 0 or k == ""}
    if isinstance(e, Bin) and e.op == "*":
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, Const):
                r = affine(x)
                return None if r is None else {k: v * int(c.value) for k, v in r.items()}
    return None


def affine_vars(e: Expr) -> set[str]:
    """Names of the variables an expression mentions."""
    return {x.name for x in iter_exprs(e) if isinstance(x, Var)}


def const_diff(a: Expr, b: Expr) -> int | None:
    """``a - b`` when it is a constant (both affine with equal variable parts), else None."""
    fa, fb = affine(a), affine(b)
    if fa is None or fb is None:
        return None
    keys = (set(fa) | set(fb)) - {""}
    if any(fa.get(k, 0) != fb.get(k, 0) for k in keys):
        return None
    return fa.get("", 0) - fb.get("", 0)


def max_extent(lp: Loop) -> int | None:
    """The largest trip count of a loop: constant bounds, ``start + c``, or ``min(start + c, ...)`` stops."""
    if lp.extent is not None:
        return lp.extent
    cands = [lp.stop]
    if isinstance(lp.stop, Bin) and lp.stop.op == "min":
        cands = [lp.stop.a, lp.stop.b]
    best = None
    for c in cands:
        d = const_diff(c, lp.start)
        if d is not None:
            n = max(0, -(-d // lp.step))
            best = n if best is None else min(best, n)
    return best


@dataclass
class Accesses:
    """Reads and writes of a statement list, per buffer, as index tuples (in program order)."""

    reads: dict[str, list[tuple[Expr, ...]]] = field(default_factory=dict)
    writes: dict[str, list[tuple[Expr, ...]]] = field(default_factory=dict)
    scalars_read: set[str] = field(default_factory=set)
    scalars_written: list[str] = field(default_factory=list)

    def written(self) -> set[str]:
        """Names of written buffers."""
        return set(self.writes)


def collect(body: Body) -> Accesses:
    """All buffer and scalar accesses in ``body`` (loop bounds and if conditions included)."""
    acc = Accesses()

    def reads_of(e: Expr) -> None:
        for x in iter_exprs(e):
            if isinstance(x, Load):
                acc.reads.setdefault(x.buffer.name, []).append(x.indices)
            elif isinstance(x, Var) and x.dtype not in INT_DTYPES:
                acc.scalars_read.add(x.name)

    for s in iter_stmts(body):
        if isinstance(s, Store):
            for i in s.indices:
                reads_of(i)
            reads_of(s.value)
            acc.writes.setdefault(s.buffer.name, []).append(s.indices)
        elif isinstance(s, Assign):
            reads_of(s.value)
            acc.scalars_written.append(s.var.name)
        elif isinstance(s, Loop):
            reads_of(s.start)
            reads_of(s.stop)
        elif isinstance(s, If):
            reads_of(s.cond)
    return acc


def index_text(ix: tuple[Expr, ...]) -> str:
    """``[i, j]`` for messages."""
    return "[" + ", ".join(expr_text(i) for i in ix) + "]"


def single_index_conflicts(acc: Accesses) -> list[str]:
    """Messages for written buffers that are touched at more than one index tuple (loop-carried dependences)."""
    out = []
    for name, ws in acc.writes.items():
        every = ws + acc.reads.get(name, [])
        first = every[0]
        for ix in every[1:]:
            if ix != first:
                out.append(f"buffer {name} is written at {index_text(first)} and also accessed at {index_text(ix)}")
                break
    return out


def reduction_vars(acc: Accesses, loop_vars: list[str]) -> list[str]:
    """The loop variables (in the given order) that appear in no written index: iterations over them share elements."""
    used: set[str] = set()
    for ws in acc.writes.values():
        for ix in ws:
            for i in ix:
                used |= affine_vars(i)
    return [v for v in loop_vars if v not in used]


def carried_scalars(body: Body) -> list[str]:
    """Float scalars read before (or without) being assigned in ``body``: values carried from one iteration to the next."""
    assigned: set[str] = set()
    carried: list[str] = []

    def visit(stmts: Body) -> None:
        for s in stmts:
            exprs: list[Expr] = []
            if isinstance(s, Store):
                exprs = [s.value, *s.indices]
            elif isinstance(s, Assign):
                exprs = [s.value]
            elif isinstance(s, Loop):
                exprs = [s.start, s.stop]
            elif isinstance(s, If):
                exprs = [s.cond]
            for e in exprs:
                for x in iter_exprs(e):
                    if isinstance(x, Var) and x.dtype not in INT_DTYPES and x.name not in assigned \
                            and x.name not in carried:
                        carried.append(x.name)
            if isinstance(s, Assign):
                assigned.add(s.var.name)
            elif isinstance(s, Loop):
                visit(s.body)
            elif isinstance(s, If):
                visit(s.then)
                visit(s.orelse)

    visit(body)
    return carried


def spatial_vars(acc: Accesses, loops: list[Loop]) -> set[str]:
    """Loop variables that select which element is written: those in written indices, plus (transitively) the
    variables that bound such loops (a split's outer loop decides its inner loop's range)."""
    used: set[str] = set()
    for ws in acc.writes.values():
        for ix in ws:
            for i in ix:
                used |= affine_vars(i)
    names = {lp.var.name for lp in loops}
    changed = True
    while changed:
        changed = False
        for lp in loops:
            if lp.var.name in used:
                extra = (affine_vars(lp.start) | affine_vars(lp.stop)) & names - used
                if extra:
                    used |= extra
                    changed = True
    return used
