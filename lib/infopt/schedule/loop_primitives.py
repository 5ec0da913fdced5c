"""Loop schedule primitives on the kernel IR: split, tile, reorder, fuse, unroll, vectorize, parallel.

(``infopt.schedule.placement`` has pack, compute_at and contract; ``infopt.schedule.builder.Schedule`` chains them all.)

Each primitive takes a ``Kernel`` and loop-variable names and returns a new ``Kernel`` that computes
the same result (the algorithm is unchanged; only the order and placement of work move). Each checks
legality first and raises ``ScheduleError`` naming the loop, buffer or index that makes the
transformation unsafe. The dependence test is conservative (``infopt.schedule.access``): written
buffers must be accessed at one index tuple per nest, and reduction loops keep their relative order
unless the kernel allows float reassociation (``fastmath=True``).
Every result passes ``verify_kernel`` (well-formed, every access proven in bounds) before it is returned.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..codegen.expr import Const, Expr, KernelError, Var, index_text, minimum
from ..codegen.kernel_ir import Body, Kernel, Loop, Stmt
from ..codegen.kernel_verify import verify_kernel
from ..codegen.walk import (
    find_loop, free_vars, iter_stmts, loop_path, replace_loop, substitute, substitute_stmt, used_names,
)
from .access import carried_scalars, collect, reduction_vars, single_index_conflicts, spatial_vars

MAX_UNROLL = 256


class ScheduleError(KernelError):
    """A schedule primitive was asked for a transformation that is ill-formed or would change the result."""


def fresh_name(k: Kernel, name: str) -> str:
    """``name`` when no loop or buffer of ``k`` uses it yet, else a ScheduleError asking for another."""
    if name in used_names(k):
        raise ScheduleError(f"kernel {k.name}: the name {name!r} is already used; pass another name")
    return name


# ----- split / tile / reorder ------------------------------------------------------------------
def split(k: Kernel, var: str, factor: int, outer: str | None = None, inner: str | None = None) -> Kernel:
    """Split loop ``var`` into ``outer`` (step ``factor``) and ``inner`` (within one block); tails get ``min`` bounds.

    When the range is a constant multiple of ``factor`` the inner loop runs ``0..factor`` (a constant
    extent that can be unrolled or vectorized); otherwise it runs ``outer..min(outer+factor, stop)``.
    Splitting never changes the iteration order, so it is always legal.
    """
    if not isinstance(factor, int) or factor < 1:
        raise ScheduleError(f"split {var}: factor must be a positive int, got {factor!r}")
    lp = find_loop(k, var)
    if lp.step != 1:
        raise ScheduleError(f"split {var}: the loop already has step {lp.step}; split loops with step 1")
    o, i = fresh_name(k, outer or f"{var}o"), fresh_name(k, inner or f"{var}i")
    ov, iv = Var(o), Var(i)
    ext = lp.extent
    if ext is not None and ext % factor == 0:
        body = tuple(substitute_stmt(s, {var: ov + iv}) for s in lp.body)
        new_inner = Loop(iv, Const(0, "i64"), Const(factor, "i64"), 1, body, lp.kind, lp.annotations)
    else:
        body = tuple(substitute_stmt(s, {var: iv}) for s in lp.body)
        new_inner = Loop(iv, ov, minimum(ov + factor, lp.stop), 1, body, lp.kind, lp.annotations)
    new_outer = Loop(ov, lp.start, lp.stop, factor, (new_inner,))
    return verify_kernel(replace_loop(k, var, lambda _: new_outer))


def _perfect_chain(k: Kernel, vars_: Sequence[str]) -> list[Loop]:
    """The loops over ``vars_`` when they form one perfectly nested chain (each body is just the next loop)."""
    paths = {v: loop_path(k.body, v) for v in vars_}
    for v, p in paths.items():
        if not p:
            find_loop(k, v)  # raises with the list of loops
    top = min(vars_, key=lambda v: len(paths[v]))
    chain = [paths[top][-1]]
    while len(chain) < len(vars_):
        body = chain[-1].body
        if len(body) != 1 or not isinstance(body[0], Loop):
            raise ScheduleError(f"kernel {k.name}: loops {list(vars_)} are not perfectly nested: loop "
                                f"{chain[-1].var.name} holds {len(body)} statements, not just one loop")
        chain.append(body[0])
    if {lp.var.name for lp in chain} != set(vars_):
        raise ScheduleError(f"kernel {k.name}: loops {list(vars_)} are not one contiguous nest; the nest from "
                            f"{top} is {[lp.var.name for lp in chain]}")
    return chain


def reorder(k: Kernel, order: Sequence[str]) -> Kernel:
    """Permute a perfect loop nest into ``order`` (outermost first), checking bounds and dependences."""
    order = list(order)
    if len(set(order)) != len(order):
        raise ScheduleError(f"reorder: {order} repeats a loop")
    chain = _perfect_chain(k, order)
    names = [lp.var.name for lp in chain]
    by = {lp.var.name: lp for lp in chain}
    for pos, v in enumerate(order):
        deps = (free_vars(by[v].start) | free_vars(by[v].stop)) & set(names)
        for d in deps:
            if order.index(d) > pos:
                raise ScheduleError(f"reorder: loop {v}'s bounds depend on loop {d} ({by[v].start}..{by[v].stop}), "
                                    f"so {v} must stay inside {d}")
    body = chain[-1].body
    acc = collect(body)
    bad = single_index_conflicts(acc)
    if bad:
        raise ScheduleError(f"reorder {names} -> {order} could change the result: {bad[0]} "
                            "(a loop-carried dependence)")
    carried = carried_scalars(body)
    if carried:
        raise ScheduleError(f"reorder {names} -> {order}: scalar {carried[0]} carries a value from one iteration "
                            "to the next; keep the loops that update it in place")
    sp = spatial_vars(acc, chain)
    red = [v for v in names if v not in sp]
    if not k.fastmath and [v for v in order if v in red] != red:
        raise ScheduleError(f"reorder {names} -> {order} swaps the reduction loops {red}: the float sums would be "
                            "added in another order; set fastmath=True on the kernel to allow it")
    new: Stmt | Body = body
    for v in reversed(order):
        lp = by[v]
        new = replace(lp, body=new if isinstance(new, tuple) else (new,))
    return verify_kernel(replace_loop(k, names[0], lambda _: new))


def tile(k: Kernel, vi: str, vj: str, ti: int, tj: int) -> Kernel:
    """Split ``vi`` by ``ti`` and ``vj`` by ``tj`` and hoist the tile loops: ``vio, vjo``, then the rest of the nest
    in its order (``vii, vji, k`` for i-j-k; ``vii, k, vji`` for i-k-j) — 2-D tiling."""
    k = split(split(k, vi, ti), vj, tj)
    four = [f"{vi}o", f"{vj}o", f"{vi}i", f"{vj}i"]
    paths = {v: loop_path(k.body, v) for v in four}
    deepest = max(four, key=lambda v: len(paths[v]))
    top = min(four, key=lambda v: len(paths[v]))
    span = [lp.var.name for lp in paths[deepest][len(paths[top]) - 1:]]
    # the two tile loops go to the top; every other loop of the nest (e.g. k) keeps its relative order
    return reorder(k, four[:2] + [v for v in span if v not in four[:2]])


# ----- loop kinds --------------------------------------------------------------------------------
def unroll(k: Kernel, var: str) -> Kernel:
    """Mark loop ``var`` for full unrolling (the backend emits its body once per iteration); needs constant bounds."""
    lp = find_loop(k, var)
    if lp.extent is None:
        raise ScheduleError(f"unroll {var}: bounds {lp.start}..{lp.stop} are not constant; split it by a factor "
                            "that divides the range first")
    if lp.extent > MAX_UNROLL:
        raise ScheduleError(f"unroll {var}: {lp.extent} iterations is too many to unroll (max {MAX_UNROLL}); split first")
    return verify_kernel(replace_loop(k, var, lambda lp: replace(lp, kind="unroll")))


def vectorize(k: Kernel, var: str, width: int | None = None, explicit: bool = False) -> Kernel:
    """Mark the innermost loop ``var`` for LLVM's loop vectorizer (lanes of ``width``), checking dependences.

    ``explicit=True`` (with a ``width``) has ``compile_tuned`` emit the loop with ``<width x float>`` vector
    types itself (``infopt.codegen.vector_emit``): elementwise loops only, no reductions."""
    lp = find_loop(k, var)
    if any(isinstance(s, Loop) for s in iter_stmts(lp.body)):
        raise ScheduleError(f"vectorize {var}: only an innermost loop can be vectorized; {var} holds other loops")
    acc = collect(lp.body)
    bad = single_index_conflicts(acc)
    if bad:
        raise ScheduleError(f"vectorize {var}: {bad[0]}; lanes would read values not yet written")
    red = reduction_vars(acc, [var]) if acc.writes else [var]
    if (red or carried_scalars(lp.body)) and not k.fastmath:
        raise ScheduleError(f"vectorize {var}: the loop is a reduction (iterations accumulate into one value); "
                            "vectorizing it reorders the float sum: set fastmath=True on the kernel")
    ann = dict(lp.annotations)
    if explicit:
        if width is None:
            raise ScheduleError(f"vectorize {var}: explicit vectorization needs a width (lanes), e.g. width=8")
        if red or carried_scalars(lp.body) or lp.step != 1:
            raise ScheduleError(f"vectorize {var}: explicit vector code is for elementwise loops with step 1; "
                                "this one reduces or carries a value (use explicit=False)")
        ann["explicit"] = True
    if width is not None:
        if width < 1 or width & (width - 1):
            raise ScheduleError(f"vectorize {var}: width must be a power of two, got {width}")
        ann["width"] = int(width)
    return verify_kernel(replace_loop(k, var, lambda lp: replace(lp, kind="vectorize", annotations=tuple(sorted(ann.items())))))


def parallel(k: Kernel, var: str) -> Kernel:
    """Run loop ``var`` across threads: it must be the kernel's only top-level statement, with constant bounds,
    and each iteration must write its own elements (temp buffers are private to each thread)."""
    if not (len(k.body) == 1 and isinstance(k.body[0], Loop) and k.body[0].var.name == var):
        raise ScheduleError(f"parallel {var}: the parallel loop must be the kernel's only top-level statement; the "
                            f"top level holds {[getattr(s, 'var', s).__str__() for s in k.body]}; fuse or move the "
                            "other statements inside it first")
    lp = k.body[0]
    if lp.extent is None:
        raise ScheduleError(f"parallel {var}: bounds must be constant to be split across threads")
    acc = collect(lp.body)
    temps = {b.name for b in k.buffers if b.role == "temp"}
    for name, ws in acc.writes.items():
        if name in temps:
            continue
        every = ws + acc.reads.get(name, [])
        for ix in every:
            if ix != ws[0]:
                raise ScheduleError(f"parallel {var}: buffer {name} is written at {index_text(ws[0])} and accessed "
                                    f"at {index_text(ix)}; threads would race")
        if not any(var in free_vars(i) or _mentions_inner_of(lp, var, i) for i in ws[0]):
            raise ScheduleError(f"parallel {var}: buffer {name} is written at {index_text(ws[0])}, which does not "
                                f"depend on {var}: every thread would write the same elements")
    return verify_kernel(replace(k, body=(replace(lp, kind="parallel"),)))


def _mentions_inner_of(lp: Loop, var: str, ix: Expr) -> bool:
    """Whether ``ix`` uses a loop whose bounds depend on ``var`` (a split's inner loop)."""
    for s in iter_stmts(lp.body):
        if isinstance(s, Loop) and s.var.name in free_vars(ix) and \
                var in (free_vars(s.start) | free_vars(s.stop)):
            return True
    return False


# ----- fusion ------------------------------------------------------------------------------------
def fuse(k: Kernel, first: str, second: str) -> Kernel:
    """Fuse two adjacent sibling loops with equal bounds into one (recursively through perfect sub-nests).

    Legal when, after renaming, every buffer the first writes and the second reads (or writes) is
    accessed at the same index in both: iteration i of the second needs only iteration i of the first.
    """
    p1, p2 = loop_path(k.body, first), loop_path(k.body, second)
    if not p1 or not p2:
        find_loop(k, first if not p1 else second)
    if p1[:-1] != p2[:-1]:
        raise ScheduleError(f"fuse: loops {first} and {second} are not siblings (they sit in different loops)")
    parent_body = p1[-2].body if len(p1) > 1 else k.body
    l1, l2 = p1[-1], p2[-1]
    pos1, pos2 = parent_body.index(l1), parent_body.index(l2)
    if pos2 != pos1 + 1:
        raise ScheduleError(f"fuse: loop {second} must come right after loop {first}")
    fused, mapping = _fuse_pair(l1, l2, {})
    acc1 = collect(l1.body)
    acc2 = collect(tuple(substitute_stmt(s, mapping) for s in l2.body))
    for name in acc1.written() | acc2.written():
        ix1 = acc1.writes.get(name, []) + acc1.reads.get(name, [])
        ix2 = acc2.writes.get(name, []) + acc2.reads.get(name, [])
        if not ix1 or not ix2:
            continue
        for ix in ix1 + ix2:
            if ix != ix1[0]:
                raise ScheduleError(f"fuse {first}+{second}: buffer {name} is accessed at {index_text(ix1[0])} in the "
                                    f"first loop and at {index_text(ix)}; iteration i of the second loop would need "
                                    "values the first has not produced yet (or overwrite ones still needed)")
    fused_vars = sorted({v.name for v in mapping.values() if isinstance(v, Var)})
    for name in acc1.written() & (set(acc2.reads) | acc2.written()):
        for ix in acc1.writes[name]:
            missing = [v for v in fused_vars if v not in set().union(*(free_vars(i) for i in ix))]
            if missing:
                raise ScheduleError(f"fuse {first}+{second}: the first loop reduces into {name}{index_text(ix)} (the "
                                    f"index does not depend on {missing[0]}), and the second loop uses {name}: it "
                                    "needs the finished reduction, so fusing would read a partial value")
    for name in set(acc1.scalars_written) & acc2.scalars_read:
        raise ScheduleError(f"fuse {first}+{second}: scalar {name} computed by the first loop is read by the second; "
                            "after fusion it would hold a partial value")
    new_parent = parent_body[:pos1] + (fused,) + parent_body[pos2 + 1:]
    if len(p1) == 1:
        return verify_kernel(replace(k, body=new_parent))
    return verify_kernel(replace_loop(k, p1[-2].var.name, lambda lp: replace(lp, body=new_parent)))


def _fuse_pair(l1: Loop, l2: Loop, mapping: dict[str, Expr]) -> tuple[Loop, dict[str, Expr]]:
    s2, e2 = substitute(l2.start, mapping), substitute(l2.stop, mapping)
    if (l1.start, l1.stop, l1.step) != (s2, e2, l2.step):
        raise ScheduleError(f"fuse: loops {l1.var.name} ({l1.start}..{l1.stop}) and {l2.var.name} ({l2.start}..{l2.stop}) "
                            "have different ranges; split or pad one to match")
    mapping = {**mapping, l2.var.name: l1.var}
    if len(l1.body) == 1 and len(l2.body) == 1 and isinstance(l1.body[0], Loop) and isinstance(l2.body[0], Loop):
        try:
            inner, mapping = _fuse_pair(l1.body[0], l2.body[0], mapping)
            return replace(l1, body=(inner,)), mapping
        except ScheduleError:
            pass
    body2 = tuple(substitute_stmt(s, mapping) for s in l2.body)
    return replace(l1, body=l1.body + body2), mapping
