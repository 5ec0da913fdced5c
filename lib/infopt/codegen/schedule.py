"""Schedule primitives on the kernel IR: split, tile, reorder, fuse, unroll, vectorize, parallel, pack, compute_at.

Each primitive takes a ``Kernel`` and loop-variable names and returns a new ``Kernel`` that computes
the same result (the algorithm is unchanged; only the order and placement of work move). Each checks
legality first and raises ``ScheduleError`` naming the loop, buffer or index that makes the
transformation unsafe. The dependence test is conservative (``infopt.codegen.access``): written
buffers must be accessed at one index tuple per nest, and reduction loops keep their relative order
unless the kernel allows float reassociation (``fastmath=True``).

``Schedule`` chains the primitives: ``Schedule(k).tile("i", "j", 32, 32).reorder(...).kernel``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from .access import (
    affine, affine_vars, carried_scalars, collect, index_text, max_extent, reduction_vars, single_index_conflicts,
    spatial_vars,
)
from .kernel_ir import Body, Buffer, Const, Expr, If, Kernel, KernelError, Load, Loop, Stmt, Store, Var, minimum
from .rewrite import find_loop, iter_stmts, substitute, substitute_stmt
from .verify import iter_exprs, verify_kernel

MAX_UNROLL = 256


class ScheduleError(KernelError):
    """A schedule primitive was asked for a transformation that is ill-formed or would change the result."""


# ----- locating loops ---------------------------------------------------------------------------
def loop_path(body: Body, var: str) -> list[Loop]:
    """The loops enclosing the loop over ``var`` (outermost first), ending with it; [] when absent."""
    for s in body:
        if isinstance(s, Loop):
            if s.var.name == var:
                return [s]
            sub = loop_path(s.body, var)
            if sub:
                return [s] + sub
        elif isinstance(s, If):
            sub = loop_path(s.then, var) or loop_path(s.orelse, var)
            if sub:
                return sub
    return []


def _replace_loop(k: Kernel, var: str, fn: Callable[[Loop], Stmt | tuple[Stmt, ...]]) -> Kernel:
    find_loop(k, var)

    def rec(body: Body) -> Body:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, Loop) and s.var.name == var:
                new = fn(s)
                out.extend(new if isinstance(new, tuple) else (new,))
            elif isinstance(s, Loop):
                out.append(replace(s, body=rec(s.body)))
            elif isinstance(s, If):
                out.append(If(s.cond, rec(s.then), rec(s.orelse)))
            else:
                out.append(s)
        return tuple(out)

    return replace(k, body=rec(k.body))


def _all_vars(k: Kernel) -> set[str]:
    names = {s.var.name for s in iter_stmts(k.body) if isinstance(s, Loop)}
    return names | {b.name for b in k.buffers}


def _fresh(k: Kernel, name: str) -> str:
    if name in _all_vars(k):
        raise ScheduleError(f"kernel {k.name}: the name {name!r} is already used; pass another name")
    return name


def _done(k: Kernel) -> Kernel:
    verify_kernel(k)
    return k


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
    o, i = _fresh(k, outer or f"{var}o"), _fresh(k, inner or f"{var}i")
    ov, iv = Var(o), Var(i)
    ext = lp.extent
    if ext is not None and ext % factor == 0:
        body = tuple(substitute_stmt(s, {var: ov + iv}) for s in lp.body)
        new_inner = Loop(iv, Const(0, "i64"), Const(factor, "i64"), 1, body, lp.kind, lp.annotations)
    else:
        body = tuple(substitute_stmt(s, {var: iv}) for s in lp.body)
        new_inner = Loop(iv, ov, minimum(ov + factor, lp.stop), 1, body, lp.kind, lp.annotations)
    new_outer = Loop(ov, lp.start, lp.stop, factor, (new_inner,))
    return _done(_replace_loop(k, var, lambda _: new_outer))


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
        deps = (affine_vars(by[v].start) | affine_vars(by[v].stop)) & set(names)
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
    return _done(_replace_loop(k, names[0], lambda _: new))


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
    return _done(_replace_loop(k, var, lambda lp: replace(lp, kind="unroll")))


def vectorize(k: Kernel, var: str, width: int | None = None) -> Kernel:
    """Mark the innermost loop ``var`` for LLVM's loop vectorizer (lanes of ``width``), checking dependences."""
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
    if width is not None:
        if width < 1 or width & (width - 1):
            raise ScheduleError(f"vectorize {var}: width must be a power of two, got {width}")
        ann["width"] = int(width)
    return _done(_replace_loop(k, var, lambda lp: replace(lp, kind="vectorize", annotations=tuple(sorted(ann.items())))))


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
        if not any(var in affine_vars(i) or _mentions_inner_of(lp, var, i) for i in ws[0]):
            raise ScheduleError(f"parallel {var}: buffer {name} is written at {index_text(ws[0])}, which does not "
                                f"depend on {var}: every thread would write the same elements")
    return _done(replace(k, body=(replace(lp, kind="parallel"),)))


def _mentions_inner_of(lp: Loop, var: str, ix: Expr) -> bool:
    """Whether ``ix`` uses a loop whose bounds depend on ``var`` (a split's inner loop)."""
    for s in iter_stmts(lp.body):
        if isinstance(s, Loop) and s.var.name in affine_vars(ix) and \
                var in (affine_vars(s.start) | affine_vars(s.stop)):
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
            missing = [v for v in fused_vars if v not in set().union(*(affine_vars(i) for i in ix))]
            if missing:
                raise ScheduleError(f"fuse {first}+{second}: the first loop reduces into {name}{index_text(ix)} (the "
                                    f"index does not depend on {missing[0]}), and the second loop uses {name}: it "
                                    "needs the finished reduction, so fusing would read a partial value")
    for name in set(acc1.scalars_written) & acc2.scalars_read:
        raise ScheduleError(f"fuse {first}+{second}: scalar {name} computed by the first loop is read by the second; "
                            "after fusion it would hold a partial value")
    new_parent = parent_body[:pos1] + (fused,) + parent_body[pos2 + 1:]
    if len(p1) == 1:
        return _done(replace(k, body=new_parent))
    return _done(_replace_loop(k, p1[-2].var.name, lambda lp: replace(lp, body=new_parent)))


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
        lo.append(_from_affine(base_forms[0]))
        ext.append(min(max(spans) + 1, buf.shape[d]))
    order = list(order) if order is not None else list(range(buf.rank))
    if sorted(order) != list(range(buf.rank)):
        raise ScheduleError(f"pack {buffer}: order {order} is not a permutation of {list(range(buf.rank))}")
    pname = _fresh(k, name or f"{buffer}_pack")
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

    new_body = (copy,) + tuple(_map_exprs(s, redirect) for s in lp.body)
    k2 = replace(k, buffers=k.buffers + (pbuf,))
    return _done(_replace_loop(k2, at, lambda l: replace(l, body=new_body)))


def _from_affine(f: dict[str, int]) -> Expr:
    e: Expr | None = None
    for v, c in sorted(f.items()):
        if v and c:
            t = Var(v) * c if c != 1 else Var(v)
            e = t if e is None else e + t
    c0 = f.get("", 0)
    if e is None:
        return Const(c0, "i64")
    return e + c0 if c0 else e


def _map_exprs(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Rebuild a statement applying ``fn`` bottom-up to the Loads in its expressions."""
    from .kernel_ir import Assign, Bin, BitCast, Call, Cast, Cmp, Select

    def ex(e: Expr) -> Expr:
        if isinstance(e, Load):
            return fn(Load(e.buffer, tuple(ex(i) for i in e.indices)))
        if isinstance(e, (Bin, Cmp)):
            return type(e)(e.op, ex(e.a), ex(e.b))
        if isinstance(e, Select):
            return Select(ex(e.cond), ex(e.a), ex(e.b))
        if isinstance(e, Call):
            return Call(e.fn, tuple(ex(a) for a in e.args))
        if isinstance(e, (Cast, BitCast)):
            return type(e)(e.to, ex(e.a))
        return e

    if isinstance(s, Store):
        return Store(s.buffer, tuple(ex(i) for i in s.indices), ex(s.value))
    if isinstance(s, Assign):
        return Assign(s.var, ex(s.value))
    if isinstance(s, Loop):
        return replace(s, start=ex(s.start), stop=ex(s.stop), body=tuple(_map_exprs(b, fn) for b in s.body))
    if isinstance(s, If):
        return If(ex(s.cond), tuple(_map_exprs(b, fn) for b in s.then), tuple(_map_exprs(b, fn) for b in s.orelse))
    return s


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
    stores = _store_paths(at_loop.body, target, [])
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
        if (affine_vars(lp.start) | affine_vars(lp.stop)) & red_inner:
            raise ScheduleError(f"compute_at: loop {lp.var.name}'s bounds depend on a reduction loop")
    mapping = dict(zip(cvars, idx))
    new: Stmt | Body = tuple(substitute_stmt(s, mapping) for s in cbody)
    for lp in reversed(spatial):
        new = (replace(lp, body=new, kind="serial" if lp.kind == "parallel" else lp.kind),)
    placed = replace(at_loop, body=at_loop.body + tuple(new))
    k2 = replace(k, body=tuple(s for s in top if s is not cons))
    return _done(_replace_loop(k2, at, lambda _: placed))


def _store_paths(body: Body, target: str, outer: list[Loop]) -> list[tuple[tuple[Expr, ...], list[Loop]]]:
    out = []
    for s in body:
        if isinstance(s, Store) and s.buffer.name == target:
            out.append((s.indices, list(outer)))
        elif isinstance(s, Loop):
            out += _store_paths(s.body, target, outer + [s])
        elif isinstance(s, If):
            out += _store_paths(s.then + s.orelse, target, outer)
    return out


# ----- contract (an intermediate becomes a register) ----------------------------------------------
def contract(k: Kernel, buffer: str) -> Kernel:
    """Replace a temp buffer that is written and read at one index inside one loop by a local scalar.

    After fusing a producer and its consumer the intermediate no longer needs memory: each iteration
    writes the element, then reads it back. The buffer must have role ``temp`` (no caller sees it),
    and be accessed inside a single loop at a single index tuple, written before it is read.
    """
    from .kernel_ir import Assign

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
        st2 = _map_exprs(st, lambda e: v if isinstance(e, Load) and e.buffer.name == buffer else e)
        if isinstance(st2, Store) and st2.buffer.name == buffer:
            st2 = Assign(v, st2.value)
            written = True
        new_body.append(st2)
    k2 = _replace_loop(k, lp.var.name, lambda l: replace(l, body=tuple(new_body)))
    return _done(replace(k2, buffers=tuple(b for b in k2.buffers if b.name != buffer)))


# ----- chaining ----------------------------------------------------------------------------------
class Schedule:
    """A kernel plus the primitives applied to it, chainable: ``Schedule(k).split("i", 8).unroll("ii").kernel``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.steps: list[str] = []

    def _apply(self, fn: Callable[..., Kernel], *args: Any, **kw: Any) -> "Schedule":
        self.kernel = fn(self.kernel, *args, **kw)
        self.steps.append(f"{fn.__name__}({', '.join([repr(a) for a in args] + [f'{a}={b!r}' for a, b in kw.items()])})")
        return self

    def split(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``split``."""
        return self._apply(split, *a, **kw)

    def tile(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``tile``."""
        return self._apply(tile, *a, **kw)

    def reorder(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``reorder``."""
        return self._apply(reorder, *a, **kw)

    def fuse(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``fuse``."""
        return self._apply(fuse, *a, **kw)

    def unroll(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``unroll``."""
        return self._apply(unroll, *a, **kw)

    def vectorize(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``vectorize``."""
        return self._apply(vectorize, *a, **kw)

    def parallel(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``parallel``."""
        return self._apply(parallel, *a, **kw)

    def pack(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``pack``."""
        return self._apply(pack, *a, **kw)

    def contract(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``contract``."""
        return self._apply(contract, *a, **kw)

    def compute_at(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``compute_at``."""
        return self._apply(compute_at, *a, **kw)

    def __str__(self) -> str:
        return "\n".join(self.steps) + "\n" + str(self.kernel)
