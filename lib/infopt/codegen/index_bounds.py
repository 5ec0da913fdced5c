"""The value range of an integer index over a loop nest, and a search of the nest for values outside a shape.

An index is bounded by eliminating loop variables innermost first: for an upper bound, a variable with a
positive coefficient is replaced by its loop's last value (``stop - 1``, or the last value its step and
start allow), one with a negative coefficient by its start. Loop bounds that are ``min``/``max`` of affine
expressions distribute (``c*min(a, b) + r = min(c*a + r, c*b + r)`` for ``c > 0``), so correlated forms such as
``ii - io`` stay exact. A guard ``g <= 0`` from an enclosing ``if`` bounds an index whose form matches it up to a
positive multiple (``if x < 10: A[x]``). Non-affine pieces (``x // 4``, ``x % 8``, loads) get interval
arithmetic, which says "unbounded" for data it cannot see. ``infopt.codegen.bounds`` uses both to classify
every access of a kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from .expr import INT_DTYPES, Bin, Cast, Cmp, Const, Expr, KernelError, Select, Var
from .kernel_ir import If, Loop, Stmt
from .py_index import NAMESPACE, VAR_PREFIX, index_source, tdiv
from .walk import free_vars

MAX_LEAVES = 64          # min/max pieces an index may distribute into before plain interval arithmetic takes over
SEARCH_LIMIT = 200_000   # loop iterations the witness search may visit before it gives up


# ----- affine forms with opaque pieces, and min/max lattices of them ----------------------------------------
class _TooBig(Exception):
    """An index distributes into more than MAX_LEAVES min/max pieces."""


@dataclass(frozen=True)
class _Atom:
    """A non-affine integer piece of an index (``x // 4``), bounded by interval arithmetic."""

    expr: Expr


@dataclass
class _Form:
    """sum(coef[k] * k) + const, k a loop-variable name or an _Atom."""

    coef: dict
    const: int = 0

    def plus(self, o: "_Form", c: int = 1) -> "_Form":
        """self + c * o."""
        out = dict(self.coef)
        for k, v in o.coef.items():
            out[k] = out.get(k, 0) + c * v
            if out[k] == 0:
                del out[k]
        return _Form(out, self.const + c * o.const)

    def key(self) -> tuple:
        """The variable part as a hashable key (for the memo)."""
        return tuple(sorted(((k if isinstance(k, str) else "@" + repr(k.expr)), v) for k, v in self.coef.items()))


@dataclass
class _Lat:
    """min(...) or max(...) of lattices."""

    op: str
    items: tuple


def _leaves(x) -> int:
    return 1 if isinstance(x, _Form) else sum(_leaves(i) for i in x.items)


def _lat(op: str, items) -> Any:
    flat = []
    for i in items:
        flat.extend(i.items if isinstance(i, _Lat) and i.op == op else (i,))
    if sum(_leaves(i) for i in flat) > MAX_LEAVES:
        raise _TooBig
    return flat[0] if len(flat) == 1 else _Lat(op, tuple(flat))


def _add(x, y):
    if isinstance(x, _Lat):
        return _lat(x.op, [_add(i, y) for i in x.items])
    if isinstance(y, _Lat):
        return _lat(y.op, [_add(x, i) for i in y.items])
    return x.plus(y)


def _scale(x, c: int):
    if isinstance(x, _Form):
        return _Form({k: v * c for k, v in x.coef.items()} if c else {}, x.const * c)
    op = x.op if c >= 0 else ("max" if x.op == "min" else "min")
    return _lat(op, [_scale(i, c) for i in x.items])


def _const(v: int) -> _Form:
    return _Form({}, int(v))


# ----- the loop nest an access sits in -------------------------------------------------------------------------
class LoopNest:
    """The loops (outermost first) and ``if`` guards around a statement, and the value ranges of index expressions
    over them: ``bounds(e)`` and ``search(indices, shape, loop_vars)``.

    ``ancestors`` are (statement, which body) pairs as ``infopt.codegen.walk.iter_scoped`` gives them; nests that
    share the same loops may share one ``shared`` dict, where bounds already worked out are kept.
    """

    def __init__(self, ancestors: tuple[tuple[Stmt, int], ...], shared: dict | None = None) -> None:
        self.frames = ancestors
        self.loops = [a for a, _ in ancestors if isinstance(a, Loop)]
        self.depth = {lp.var.name: n for n, lp in enumerate(self.loops)}
        self.empty = any(lp.extent == 0 for lp in self.loops)
        # bounds depend on the loops and on the guards in use: nests with the same loops share what they computed
        cache = (shared if shared is not None else {}).setdefault(tuple(id(lp) for lp in self.loops), ({}, {}, {}))
        self._memo, self._cong, self._var_up = cache
        self.guards: list[_Form] = []
        for a, branch in ancestors:
            if isinstance(a, If):
                self.guards += self._guard_forms(a.cond, branch == 0)
        self._guard_keys = [(g.key(), g.const) for g in self.guards]

    # expressions -> lattices
    def lattice(self, e: Expr):
        """``e`` as min/max of affine forms in this nest's loop variables, non-affine pieces kept as atoms."""
        if isinstance(e, Const) and e.dtype in INT_DTYPES:
            return _const(e.value)
        if isinstance(e, Var) and e.name in self.depth:
            return _Form({e.name: 1})
        if isinstance(e, Bin) and e.op in ("+", "-"):
            return _add(self.lattice(e.a), _scale(self.lattice(e.b), 1 if e.op == "+" else -1))
        if isinstance(e, Bin) and e.op == "*":
            for x, c in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, Const):
                    return _scale(self.lattice(x), int(c.value))
        if isinstance(e, Bin) and e.op in ("min", "max"):
            return _lat(e.op, [self.lattice(e.a), self.lattice(e.b)])
        if isinstance(e, Cast) and e.to in INT_DTYPES and e.a.dtype in INT_DTYPES:
            return self.lattice(e.a)
        return _Form({_Atom(e): 1})

    def _guard_forms(self, cond: Expr, truth: bool) -> list[_Form]:
        """Constraints ``form <= 0`` that hold where ``cond`` is ``truth``."""
        if not isinstance(cond, Cmp) or cond.a.dtype not in INT_DTYPES:
            return []
        op = cond.op if truth else {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[cond.op]
        try:
            a, b = self.lattice(cond.a), self.lattice(cond.b)
        except _TooBig:
            return []
        if not (isinstance(a, _Form) and isinstance(b, _Form)):
            return []
        amb = a.plus(b, -1)
        bma = b.plus(a, -1)
        return {"<": [amb.plus(_const(1))], "<=": [amb], ">": [bma.plus(_const(1))], ">=": [bma],
                "==": [amb, bma], "!=": []}[op]

    # bounds
    def bounds(self, e: Expr) -> tuple[int | None, int | None]:
        """(lowest, highest) value of integer expression ``e`` over the nest (None where unbounded)."""
        try:
            lat = self.lattice(e)
            return self._lower(lat), self._upper(lat)
        except _TooBig:
            return self._interval(e)

    def _lower(self, lat) -> int | None:
        hi = self._upper(_scale(lat, -1))
        return None if hi is None else -hi

    def _upper(self, lat, guards: frozenset | None = None) -> int | None:
        guards = frozenset(range(len(self.guards))) if guards is None else guards
        if isinstance(lat, _Lat):
            vals = [self._upper(i, guards) for i in lat.items]
            if lat.op == "min":
                finite = [v for v in vals if v is not None]
                return min(finite) if finite else None
            return None if any(v is None for v in vals) else max(vals)
        return self._upper_form(lat, guards)

    def _upper_form(self, f: _Form, guards: frozenset) -> int | None:
        loop_vars = [k for k in f.coef if isinstance(k, str)]
        if not loop_vars:
            total = f.const
            for atom, c in f.coef.items():
                lo, hi = self._interval(atom.expr)
                v = hi if c > 0 else lo
                if v is None:
                    return None
                total += c * v
            return total
        key = (f.key(), frozenset(self._guard_keys[i] for i in guards))
        if key in self._memo:
            r = self._memo[key]
            return None if r is None else r + f.const
        rel = _Form(f.coef, 0)
        cands: list[int] = []
        v = max(loop_vars, key=lambda n: self.depth[n])   # innermost first
        c = rel.coef[v]
        rest = _Form({k: x for k, x in rel.coef.items() if k != v}, 0)
        try:
            repl = self._var_upper(v) if c > 0 else self._var_lower(v)
            r = self._upper(_add(rest, _scale(repl, c)), guards)
        except _TooBig:
            r = None
        if r is not None:
            cands.append(r)
        for gi in guards:
            g = self.guards[gi]
            for u in loop_vars:
                cg = g.coef.get(u, 0)
                if cg and rel.coef[u] * cg > 0 and rel.coef[u] % cg == 0:
                    r = self._upper_form(rel.plus(g, -(rel.coef[u] // cg)), guards - {gi})
                    if r is not None:
                        cands.append(r)
        best = min(cands) if cands else None
        self._memo[key] = best
        return None if best is None else best + f.const

    def _var_lower(self, v: str):
        return self.lattice(self.loops[self.depth[v]].start)

    def _var_upper(self, v: str):
        """A lattice bounding loop variable ``v`` from above: its last value, as exactly as the step allows."""
        if v not in self._var_up:
            self._var_up[v] = self._last_value(v)
        return self._var_up[v]

    def _last_value(self, v: str):
        lp = self.loops[self.depth[v]]
        stop = self.lattice(lp.stop)
        if lp.step == 1:
            return _add(stop, _const(-1))
        start = self.lattice(lp.start)
        g, r = self.congruence(v)
        pieces = stop.items if isinstance(stop, _Lat) and stop.op == "min" else (stop,)
        out = []
        for p in pieces:
            d = p.plus(start, -1) if isinstance(p, _Form) and isinstance(start, _Form) else None
            if d is not None and not d.coef:            # stop = start + D: the last value is start + step*floor((D-1)/step)
                out.append(_add(start, _const(lp.step * ((d.const - 1) // lp.step))))
            elif isinstance(p, _Form) and not p.coef:   # a constant stop: the last value of v's residue class below it
                out.append(_const(r + g * ((p.const - 1 - r) // g)))
            else:
                out.append(_add(p, _const(-1)))
        return _lat("min", out)

    def congruence(self, v: str) -> tuple[int, int]:
        """(g, r) with v = r (mod g) for every value of loop variable ``v`` (from its start and step)."""
        if v in self._cong:
            return self._cong[v]
        lp = self.loops[self.depth[v]]
        g, r = lp.step, 0
        try:
            start = self.lattice(lp.start)
        except _TooBig:
            start = None
        if isinstance(start, _Form) and all(isinstance(k, str) for k in start.coef):
            r = start.const
            for u, c in start.coef.items():
                gu, ru = self.congruence(u)
                g = math.gcd(g, abs(c) * gu)
                r += c * ru
        else:
            g = 1
        out = (g, r % g if g else r)
        self._cong[v] = out
        return out

    def _interval(self, e: Expr) -> tuple[int | None, int | None]:
        """Plain interval arithmetic (no correlation between operands), for pieces the lattice cannot hold."""
        if isinstance(e, Const) and e.dtype in INT_DTYPES:
            return int(e.value), int(e.value)
        if isinstance(e, Var) and e.name in self.depth:
            f = _Form({e.name: 1})
            return self._lower(f), self._upper(f)
        if isinstance(e, Cast) and e.to in INT_DTYPES and e.a.dtype in INT_DTYPES:
            return self.bounds(e.a)
        if isinstance(e, Select) and e.dtype in INT_DTYPES:
            (a0, a1), (b0, b1) = self.bounds(e.a), self.bounds(e.b)
            return (None if a0 is None or b0 is None else min(a0, b0), None if a1 is None or b1 is None else max(a1, b1))
        if not isinstance(e, Bin) or e.dtype not in INT_DTYPES:
            return None, None
        (a0, a1), (b0, b1) = self.bounds(e.a), self.bounds(e.b)
        if e.op == "//" and isinstance(e.b, Const) and int(e.b.value) > 0:
            d = int(e.b.value)                           # truncating division by d > 0 is monotone
            return (None if a0 is None else tdiv(a0, d), None if a1 is None else tdiv(a1, d))
        if e.op == "%" and isinstance(e.b, Const) and int(e.b.value) > 0:
            d = int(e.b.value)
            if a0 is not None and a0 >= 0:
                if a1 is not None and a1 - a0 < d and a0 % d <= a1 % d:
                    return a0 % d, a1 % d
                return 0, d - 1 if a1 is None else min(d - 1, a1)
            return -(d - 1), d - 1
        if None in (a0, a1, b0, b1):
            return None, None
        if e.op == "+":
            return a0 + b0, a1 + b1
        if e.op == "-":
            return a0 - b1, a1 - b0
        if e.op == "*":
            ps = [a0 * b0, a0 * b1, a1 * b0, a1 * b1]
            return min(ps), max(ps)
        if e.op in ("min", "max"):
            f = min if e.op == "min" else max
            return f(a0, b0), f(a1, b1)
        return None, None

    # the search for a witness
    def search(self, indices: Sequence[Expr], shape: Sequence[int], loop_vars: Sequence[str],
               limit: int | None = None) -> tuple[str, Any]:
        """Visit the nest's loop values in program order looking for ``indices`` outside ``shape``:
        ('violation', (index values, {loop: value})), ('safe', None) when every index stays inside, or
        ('unknown', None) (an index, bound or guard it cannot evaluate, or more than ``limit`` iterations)."""
        limit = SEARCH_LIMIT if limit is None else limit
        relevant = set().union(*(free_vars(i) for i in indices)) if indices else set()
        for a, _ in self.frames:
            if isinstance(a, If):
                relevant |= free_vars(a.cond)
        for lp in reversed(self.loops):
            if lp.var.name in relevant:
                relevant |= free_vars(lp.start) | free_vars(lp.stop)
        try:
            lines = ["def _search(_limit):", "    _n = 0"]
            ind = "    "
            breaks: list[str] = []
            for a, branch in self.frames:
                if isinstance(a, Loop):
                    v = VAR_PREFIX + a.var.name
                    lines.append(f"{ind}for {v} in range({index_source(a.start)}, {index_source(a.stop)}, {a.step}):")
                    ind += "    "
                    lines += [f"{ind}_n += 1", f"{ind}if _n > _limit: return ('unknown', None)"]
                    breaks.append(ind if a.var.name not in relevant else "")
                else:
                    cond = index_source(a.cond)
                    lines.append(f"{ind}if {'' if branch == 0 else 'not '}{cond}:")
                    ind += "    "
                    breaks.append("")
            ix = [index_source(i) for i in indices]
        except KernelError:
            return "unknown", None
        lines.append(f"{ind}_ix = ({''.join(x + ', ' for x in ix)})")
        inside = " and ".join(f"0 <= _ix[{d}] < {n}" for d, n in enumerate(shape)) or "True"
        loops = ", ".join(f"{VAR_PREFIX}{n}" for n in loop_vars)
        lines.append(f"{ind}if not ({inside}): return ('violation', (_ix, ({loops}{',' if loops else ''})))")
        for pad in reversed(breaks):                      # a loop no index depends on runs its first iteration only
            if pad:
                lines.append(f"{pad}break")
        lines.append("    return ('safe', None)")
        env = dict(NAMESPACE)
        exec(compile("\n".join(lines), "<bounds search>", "exec"), env)  # noqa: S102 - code we generated
        kind, found = env["_search"](limit)
        if kind == "violation":
            values, loopvals = found
            return kind, (tuple(int(x) for x in values), dict(zip(loop_vars, (int(x) for x in loopvals))))
        return kind, None
