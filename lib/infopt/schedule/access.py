"""Memory accesses of a loop nest for legality tests: reads and writes per buffer, reduction variables.

Schedule primitives (``infopt.schedule.loop_primitives``, ``placement``) use these to decide legality. The test is the
classic conservative one for the loop nests of unit 06: a statement group may be reordered or
fused when every buffer it writes is read and written at one index tuple only (each iteration owns
its element); loop variables absent from those written indices are *reduction* variables, whose
relative order decides the floating-point summation order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..codegen.affine import const_diff
from ..codegen.expr import INT_DTYPES, Bin, Expr, Var, index_text
from ..codegen.kernel_ir import Assign, Body, Loop
from ..codegen.walk import accesses, free_vars, iter_exprs, iter_stmts


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
    for s, buf, ix, is_write in accesses(body):
        (acc.writes if is_write else acc.reads).setdefault(buf.name, []).append(ix)
    for s in iter_stmts(body):
        for e in s.exprs:
            acc.scalars_read |= {x.name for x in iter_exprs(e) if isinstance(x, Var) and x.dtype not in INT_DTYPES}
        if isinstance(s, Assign):
            acc.scalars_written.append(s.var.name)
    return acc


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
                used |= free_vars(i)
    return [v for v in loop_vars if v not in used]


def carried_scalars(body: Body) -> list[str]:
    """Float scalars read before (or without) being assigned in ``body``: values carried from one iteration to the next."""
    assigned: set[str] = set()
    carried: list[str] = []

    def visit(stmts: Body) -> None:
        for s in stmts:
            for e in s.exprs:
                for x in iter_exprs(e):
                    if isinstance(x, Var) and x.dtype not in INT_DTYPES and x.name not in assigned \
                            and x.name not in carried:
                        carried.append(x.name)
            if isinstance(s, Assign):
                assigned.add(s.var.name)
            for b in s.bodies:
                visit(b)

    visit(body)
    return carried


def spatial_vars(acc: Accesses, loops: list[Loop]) -> set[str]:
    """Loop variables that select which element is written: those in written indices, plus (transitively) the
    variables that bound such loops (a split's outer loop decides its inner loop's range)."""
    used: set[str] = set()
    for ws in acc.writes.values():
        for ix in ws:
            for i in ix:
                used |= free_vars(i)
    names = {lp.var.name for lp in loops}
    changed = True
    while changed:
        changed = False
        for lp in loops:
            if lp.var.name in used:
                extra = (free_vars(lp.start) | free_vars(lp.stop)) & names - used
                if extra:
                    used |= extra
                    changed = True
    return used
