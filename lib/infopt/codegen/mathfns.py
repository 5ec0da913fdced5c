"""Special functions written in the kernel IR, so LLVM can vectorize them (a libm call per element it cannot).

``exp_stmts`` computes e^x the way vector math libraries do:
range reduction ``x = n*ln2 + r`` with ``n = round(x/ln2)`` and ``|r| <= ln2/2``; a degree-6
polynomial for ``e^r`` (Cephes ``expf`` coefficients, relative error ~1e-7 on that interval); and
``2^n`` built by writing exponents into float bits (as two factors, so limits behave like libm). Every step is an add, a multiply,
a round, a convert or a bitcast, all of which have SIMD instructions.
"""
from __future__ import annotations

from .expr import BitCast, Call, Cast, Const, Expr, Var, cmp, maximum, minimum, select
from .kernel_ir import Assign, Stmt

LN2_HI = 0.693359375  # ln 2 split in two parts so n*LN2_HI is exact (Cody-Waite)
LN2_LO = -2.12194440e-4
LOG2E = 1.44269504088896341
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
EXP_LO, EXP_HI = -104.0, 89.0  # e^-104 underflows to 0 and e^89 overflows to inf in f32, as in libm


def _pow2(n: Expr) -> Expr:
    """2^n for an i32 n in [-126, 127], by writing n + 127 into the exponent field."""
    return BitCast("f32", (n + Const(127, "i32")) * Const(1 << 23, "i32"))


def exp_stmts(out: Var, x: Expr, prefix: str | None = None) -> list[Stmt]:
    """Statements that set the f32 scalar ``out`` to e^x (max rel. error ~2e-7; inf, 0 and NaN as libm)."""
    if x.dtype != "f32" or out.dtype != "f32":
        raise ValueError(f"exp_stmts works on f32 (got x: {x.dtype}, out: {out.dtype})")
    p = prefix or f"{out.name}_"
    xv, xc, n, r, q = (Var(p + v, "f32") for v in ("in", "x", "n", "r", "q"))
    ni, n1 = Var(p + "ni", "i32"), Var(p + "n1", "i32")
    stmts: list[Stmt] = [
        Assign(xv, x),
        Assign(xc, minimum(maximum(xv, EXP_LO), EXP_HI)),
        Assign(n, Call("round", (xc * LOG2E,))),
        Assign(r, xc - n * LN2_HI - n * LN2_LO),
    ]
    poly: Expr = Const(EXP_POLY[0], "f32")
    for c in EXP_POLY[1:]:
        poly = poly * r + c
    stmts += [
        Assign(q, poly * (r * r) + r + 1.0),
        # 2^n as 2^n1 * 2^(n-n1): each factor stays a normal float, so results near the limits
        # underflow gradually to 0 (denormals) and overflow to inf exactly where libm's do
        Assign(ni, Cast("i32", n)),
        Assign(n1, ni // Const(2, "i32")),
        Assign(out, select(cmp("==", xv, xv), q * _pow2(n1) * _pow2(ni - n1), xv)),  # NaN stays NaN
    ]
    return stmts
