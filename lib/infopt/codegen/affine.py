"""Affine index forms: an integer expression as {variable: coefficient, "": constant}, and back.

Index expressions of loop nests are affine in the loop variables (``i*4 + j - 1``); the bounds prover,
the explicit vectorizer (is an access contiguous in the vector loop?) and the schedule primitives
(dependence tests, packing) read them in this form.
"""
from __future__ import annotations

from .expr import INT_DTYPES, Bin, Const, Expr, Var

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


def const_diff(a: Expr, b: Expr) -> int | None:
    """``a - b`` when it is a constant (both affine with equal variable parts), else None."""
    fa, fb = affine(a), affine(b)
    if fa is None or fb is None:
        return None
    keys = (set(fa) | set(fb)) - {""}
    if any(fa.get(k, 0) != fb.get(k, 0) for k in keys):
        return None
    return fa.get("", 0) - fb.get("", 0)


def from_affine(f: Affine) -> Expr:
    """The expression ``sum(c * v) + constant`` of an affine form (variables in name order)."""
    e: Expr | None = None
    for v, c in sorted(f.items()):
        if v and c:
            t = Var(v) * c if c != 1 else Var(v)
            e = t if e is None else e + t
    c0 = f.get("", 0)
    if e is None:
        return Const(c0, "i64")
    return e + c0 if c0 else e
