"""Integer index arithmetic as Python source: loop bounds, ``if`` guards and indices, evaluated without values.

The address trace (``infopt.schedule.address_trace``) and the bounds prover's search for an
out-of-bounds witness both translate a loop nest to a small Python program; this module writes the
expressions. Loop variable ``i`` becomes ``v_i``; ``//`` and ``%`` keep C's truncating semantics
(``tdiv``/``tmod``, which the generated code must find in its namespace as ``_tdiv``/``_tmod``).
"""
from __future__ import annotations

from .expr import FLOAT_DTYPES, Bin, Cmp, Const, Expr, KernelError, Var

VAR_PREFIX = "v_"


def tdiv(a: int, b: int) -> int:
    """Integer division truncating toward zero, as in C."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tmod(a: int, b: int) -> int:
    """The remainder that goes with ``tdiv`` (its sign follows ``a``), as in C."""
    return a - b * tdiv(a, b)


NAMESPACE = {"_tdiv": tdiv, "_tmod": tmod}
"""What generated code needs to run."""


def is_index_expr(e: Expr) -> bool:
    """Whether ``e`` is made of integer constants, variables and + - * // % min max comparisons only."""
    try:
        index_source(e)
    except KernelError:
        return False
    return True


def index_source(e: Expr, what: str = "index") -> str:
    """Python source computing the integer expression ``e`` from variables ``v_<name>``."""
    if isinstance(e, Const):
        return repr(int(e.value)) if e.dtype not in FLOAT_DTYPES else repr(float(e.value))
    if isinstance(e, Var):
        return VAR_PREFIX + e.name
    if isinstance(e, Bin):
        a, b = index_source(e.a, what), index_source(e.b, what)
        if e.op in ("max", "min"):
            return f"{e.op}({a}, {b})"
        if e.op == "//":
            return f"_tdiv({a}, {b})"
        if e.op == "%":
            return f"_tmod({a}, {b})"
        return f"({a} {e.op} {b})"
    if isinstance(e, Cmp):
        return f"({index_source(e.a, what)} {e.op} {index_source(e.b, what)})"
    raise KernelError(f"the {what} needs expressions made of loop variables and integers, got {e!r}")
