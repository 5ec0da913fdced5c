"""Placement primitives: where data and work live. ``pack`` copies a tile into a contiguous temp buffer,
``compute_at`` moves a consumer (an epilogue) into a producer's loop, ``contract`` keeps a fused intermediate
in a register. Same contract as ``infopt.schedule.loop_primitives``: legality is checked, ``ScheduleError``
explains, and the result is verified.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..codegen.affine import affine, from_affine
from ..codegen.expr import Buffer, Const, Expr, Load, Var, index_text, minimum
from ..codegen.kernel_ir import Assign, Body, Kernel, Loop, Stmt, Store
from ..codegen.kernel_verify import verify_kernel
from ..codegen.walk import (
    find_loop, free_vars, iter_scoped, iter_stmts, loop_path, map_stmt, replace_loop, substitute_stmt,
)
from .access import collect, max_extent, spatial_vars
from .loop_primitives import ScheduleError, fresh_name


# ----- pack --------------------------------------------------------------------------------------
def pack(k: Kernel, buffer: str, at: str, name: str | None = None, order: Sequence[int] | None = None) -> Kernel:
    """Copy the tile of ``buffer`` that loop ``at``'s body reads into a contiguous temp buffer, and read from it.

    The tile is the bounding box of the reads over the loops inside ``at`` (affine indices with
    nonnegative coefficients); ``order`` permutes its dimensions in the packed copy (e.g. (1, 0)
    stores it transposed). Edge tiles are clamped, so no read goes out of bounds.
    """
    buf = k.buffer(buffer)
    path = loop_path(k.body, at)
    if not path:
        find_loop(k, at)
    lp = path[-1]
    acc = collect(lp.body)
    if buffer in acc.writes:
        raise ScheduleError(f"pack {buffer} at {at}: {buffer} is written inside loop {at}; a packed copy would go stale")
    reads = acc.reads.get(buffer)
    if not reads:
        raise ScheduleError(f"pack {buffer} at {at}: loop {at} does not read {buffer}")
    inner = {s.var.name: s for s in iter_stmts(lp.body) if isinstance(s, Loop)}
    lo: list[Expr] = []
    ext: list[int] = []
    for d in range(buf.rank):
        base_forms, spans = [], []
        for ix in reads:
            f = affine(ix[d])
            if f is None:
                raise ScheduleError(f"pack {buffer} at {at}: index {d} of {buffer}{index_text(ix)} is not affine")
            span, base = 0, dict(f)
            for _ in range(len(inner) + 1):  # replace inner loop variables by their (outer) start values
                hit = [v for v in base if v in inner]
                if not hit:
                    break
                for v in hit:
                    c = base.pop(v)
                    n, start = max_extent(inner[v]), affine(inner[v].start)
                    if n is None or c < 0 or start is None:
                        raise ScheduleError(f"pack {buffer} at {at}: cannot bound loop {v} ({inner[v].start}.."
                                            f"{inner[v].stop}) to size the packed tile")
                    span += c * (n - 1) * inner[v].step
                    for sv, sc in start.items():
                        base[sv] = base.get(sv, 0) + c * sc
            base = {v: c for v, c in base.items() if c != 0 or v == ""}
            base_forms.append(base)
            spans.append(span)
        if any(b != base_forms[0] for b in base_forms):
            raise ScheduleError(f"pack {buffer} at {at}: the reads of {buffer} start at different offsets in dimension {d}")
        lo.append(from_affine(base_forms[0]))
        ext.append(min(max(spans) + 1, buf.shape[d]))
    order = list(order) if order is not None else list(range(buf.rank))
    if sorted(order) != list(range(buf.rank)):
        raise ScheduleError(f"pack {buffer}: order {order} is not a permutation of {list(range(buf.rank))}")
    pname = fresh_name(k, name or f"{buffer}_pack")
    pbuf = Buffer(pname, tuple(ext[o] for o in order), buf.dtype, "temp")
    tv = [Var(f"{pname}_t{d}") for d in range(buf.rank)]
    src = Load(buf, tuple(minimum(lo[d] + tv[d], buf.shape[d] - 1) for d in range(buf.rank)))
    copy: Stmt = Store(pbuf, tuple(tv[o] for o in order), src)
    for o in reversed(order):
        copy = Loop(tv[o], Const(0, "i64"), Const(ext[o], "i64"), 1, (copy,))

    def redirect(e: Expr) -> Expr:
        if isinstance(e, Load) and e.buffer.name == buffer:
            rel = tuple(ix - lo[d] for d, ix in enumerate(e.indices))
            return Load(pbuf, tuple(rel[o] for o in order))
        return e

    new_body = (copy,) + tuple(map_stmt(s, redirect) for s in lp.body)
    k2 = replace(k, buffers=k.buffers + (pbuf,))
    return verify_kernel(replace_loop(k2, at, lambda l: replace(l, body=new_body)))


# ----- compute_at (epilogue / producer placement) -------------------------------------------------
def compute_at(k: Kernel, consumer: str, at: str) -> Kernel:
    """Move the top-level elementwise nest ``consumer`` (e.g. bias+ReLU on C) inside the producer's loop ``at``.

    The consumer must read and write its buffer only at its own loop indices; inside ``at`` it runs
    over the elements the producer has just finished. Illegal (ScheduleError) when a reduction loop
    of the producer encloses ``at``: the values would not be final yet.
    """
    top = [s for s in k.body]
    cons = next((s for s in top if isinstance(s, Loop) and s.var.name == consumer), None)
    if cons is None:
        raise ScheduleError(f"compute_at: {consumer!r} is not a top-level loop of kernel {k.name}")
    chain = [cons]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], Loop):
        chain.append(chain[-1].body[0])
    cvars = [lp.var.name for lp in chain]
    cbody = chain[-1].body
    cacc = collect(cbody)
    if len(cacc.writes) != 1:
        raise ScheduleError(f"compute_at: consumer {consumer} must write exactly one buffer, writes {sorted(cacc.writes)}")
    (target, ws), = cacc.writes.items()
    plain = tuple(Var(v) for v in cvars)
    for ix in ws + cacc.reads.get(target, []):
        if ix != plain:
            raise ScheduleError(f"compute_at: consumer {consumer} accesses {target}{index_text(ix)}; it must be "
                                f"elementwise, touching {target}{index_text(plain)} only")
    prod = next((s for s in top if loop_path((s,), at)), None)
    if prod is None:
        find_loop(k, at)
    if top.index(prod) > top.index(cons):
        raise ScheduleError(f"compute_at: the producer of loop {at} comes after consumer {consumer}")
    between = top[top.index(prod) + 1:top.index(cons)]
    if any(target in collect((s,)).reads or target in collect((s,)).writes for s in between):
        raise ScheduleError(f"compute_at: statements between the producer and {consumer} use {target}")
    path = loop_path((prod,), at)
    at_loop = path[-1]
    stores = _store_paths(at_loop.body, target)
    if not stores:
        raise ScheduleError(f"compute_at: loop {at} does not write {target}")
    idx, inner = max(stores, key=lambda t: len(t[1]))
    if any(s[0] != idx for s in stores):
        raise ScheduleError(f"compute_at: loop {at} writes {target} at several indices; cannot place {consumer}")
    used = spatial_vars(collect((Store(Buffer(target, (1,) * len(idx)), idx, Const(0.0)),)), path + inner)
    outer_red = [lp.var.name for lp in path if lp.var.name not in used]
    if outer_red:
        raise ScheduleError(f"compute_at: loop {outer_red[0]} encloses {at} but is a reduction into {target} "
                            f"(it does not index {target}{index_text(idx)}): {target} is not final inside {at}")
    if len(idx) != len(cvars):
        raise ScheduleError(f"compute_at: consumer has {len(cvars)} loops but {target} has rank {len(idx)}")
    spatial = [lp for lp in inner if lp.var.name in used]
    red_inner = {lp.var.name for lp in inner if lp.var.name not in used}
    for lp in spatial:
        if (free_vars(lp.start) | free_vars(lp.stop)) & red_inner:
            raise ScheduleError(f"compute_at: loop {lp.var.name}'s bounds depend on a reduction loop")
    mapping = dict(zip(cvars, idx))
    new: Stmt | Body = tuple(substitute_stmt(s, mapping) for s in cbody)
    for lp in reversed(spatial):
        new = (replace(lp, body=new, kind="serial" if lp.kind == "parallel" else lp.kind),)
    placed = replace(at_loop, body=at_loop.body + tuple(new))
    k2 = replace(k, body=tuple(s for s in top if s is not cons))
    return verify_kernel(replace_loop(k2, at, lambda _: placed))


def _store_paths(body: Body, target: str) -> list[tuple[tuple[Expr, ...], list[Loop]]]:
    """The stores to ``target`` in ``body``, each with the loops (inside ``body``) that enclose it."""
    return [(s.indices, [a for a, _ in anc if isinstance(a, Loop)]) for s, _, anc in iter_scoped(body)
            if isinstance(s, Store) and s.buffer.name == target]


# ----- contract (an intermediate becomes a register) ----------------------------------------------
def contract(k: Kernel, buffer: str) -> Kernel:
    """Replace a temp buffer that is written and read at one index inside one loop by a local scalar.

    After fusing a producer and its consumer the intermediate no longer needs memory: each iteration
    writes the element, then reads it back. The buffer must have role ``temp`` (no caller sees it),
    and be accessed inside a single loop at a single index tuple, written before it is read.
    """
    buf = k.buffer(buffer)
    if buf.role != "temp":
        raise ScheduleError(f"contract {buffer}: role is {buf.role!r}; only 'temp' buffers (invisible to the caller) "
                            "can be kept in registers")
    holders = [s for s in iter_stmts(k.body) if isinstance(s, Loop)
               and not any(isinstance(b, Loop) for b in s.body)
               and (buffer in collect(s.body).reads or buffer in collect(s.body).writes)]
    if len(holders) != 1:
        raise ScheduleError(f"contract {buffer}: it is used in {len(holders)} innermost loops; fuse them into one first")
    lp = holders[0]
    acc, acc_all = collect(lp.body), collect(k.body)
    if len(acc_all.writes.get(buffer, [])) != len(acc.writes.get(buffer, [])) or \
            len(acc_all.reads.get(buffer, [])) != len(acc.reads.get(buffer, [])):
        raise ScheduleError(f"contract {buffer}: it is also used outside loop {lp.var.name}")
    ixs = acc.writes.get(buffer, []) + acc.reads.get(buffer, [])
    if any(ix != ixs[0] for ix in ixs):
        raise ScheduleError(f"contract {buffer}: it is accessed at several indices in loop {lp.var.name}")
    v = Var(f"{buffer}_r", buf.dtype)
    written = False
    new_body: list[Stmt] = []
    for st in lp.body:
        if buffer in collect((st,)).reads and not written:
            raise ScheduleError(f"contract {buffer}: loop {lp.var.name} reads it before writing it")
        st2 = map_stmt(st, lambda e: v if isinstance(e, Load) and e.buffer.name == buffer else e)
        if isinstance(st2, Store) and st2.buffer.name == buffer:
            st2 = Assign(v, st2.value)
            written = True
        new_body.append(st2)
    k2 = replace_loop(k, lp.var.name, lambda l: replace(l, body=tuple(new_body)))
    return verify_kernel(replace(k2, buffers=tuple(b for b in k2.buffers if b.name != buffer)))
