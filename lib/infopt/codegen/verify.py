"""Well-formedness checks on a kernel, run before LLVM sees it, with errors that name the statement.

Checked: every buffer a statement touches is a kernel argument with that shape and dtype; index
counts match ranks; indices are integers; an index is in bounds when it is a constant, or affine in
loop variables whose loops have constant bounds (and no ``if`` guards it); operand dtypes agree;
variables are defined before use; loops do not reuse an enclosing loop's variable; ``in`` buffers
are not written.
"""
from __future__ import annotations

from typing import Iterator

from .kernel_ir import (
    BIN_OPS, CALL_FNS, CMP_OPS, FLOAT_DTYPES, INT_DTYPES, Assign, Bin, BitCast, Call, Cast, Cmp, Const, Expr, If,
    Kernel, KernelError, Load, Loop, Select, Stmt, Store, Var,
)
from .printer import expr_text, stmt_text

Interval = tuple[int, int]


def iter_exprs(e: Expr) -> Iterator[Expr]:
    """Every sub-expression of ``e``, parents before children."""
    yield e
    if isinstance(e, Load):
        for i in e.indices:
            yield from iter_exprs(i)
    elif isinstance(e, (Bin, Cmp)):
        yield from iter_exprs(e.a)
        yield from iter_exprs(e.b)
    elif isinstance(e, Select):
        for x in (e.cond, e.a, e.b):
            yield from iter_exprs(x)
    elif isinstance(e, Call):
        for a in e.args:
            yield from iter_exprs(a)
    elif isinstance(e, (Cast, BitCast)):
        yield from iter_exprs(e.a)


def affine_interval(e: Expr, ranges: dict[str, Interval]) -> Interval | None:
    """The exact [lo, hi] of an affine integer expression over independent loop ranges, or None if not affine/known."""
    if isinstance(e, Const) and e.dtype in INT_DTYPES:
        return (int(e.value), int(e.value))
    if isinstance(e, Var):
        return ranges.get(e.name)
    if isinstance(e, Bin) and e.op in ("+", "-"):
        a, b = affine_interval(e.a, ranges), affine_interval(e.b, ranges)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if e.op == "+" else (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Bin) and e.op == "*":
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, Const):
                r = affine_interval(x, ranges)
                if r is None:
                    return None
                v = int(c.value)
                return (min(r[0] * v, r[1] * v), max(r[0] * v, r[1] * v))
    return None


class _Checker:
    def __init__(self, k: Kernel) -> None:
        self.k = k
        self.bufs = {b.name: b for b in k.buffers}
        self.scalars: dict[str, str] = {}

    def fail(self, s: Stmt, msg: str) -> None:
        raise KernelError(f"kernel {self.k.name}, statement `{stmt_text(s, 0)[0].strip()}`: {msg}")

    def check_buffer(self, s: Stmt, buf, indices, ranges, guarded: bool) -> None:
        known = self.bufs.get(buf.name)
        if known is None:
            self.fail(s, f"buffer {buf.name!r} is not an argument of the kernel (arguments: {list(self.bufs)}); "
                         "add it to Kernel(buffers=...)")
        if known != buf:
            self.fail(s, f"buffer {buf.name} is used as {buf} but the kernel declares it as {known}")
        if len(indices) != buf.rank:
            self.fail(s, f"buffer {buf.name} has rank {buf.rank} (shape {buf.shape}) but is indexed with "
                         f"{len(indices)} indices [{', '.join(map(expr_text, indices))}]")
        for d, (ix, n) in enumerate(zip(indices, buf.shape)):
            if ix.dtype not in INT_DTYPES:
                self.fail(s, f"index {d} of {buf.name} ({expr_text(ix)}) has dtype {ix.dtype}; indices must be integers")
            if guarded and not isinstance(ix, Const):
                continue
            r = affine_interval(ix, ranges)
            if r is not None and r[1] >= r[0] and (r[0] < 0 or r[1] >= n):
                self.fail(s, f"index {d} of {buf.name} ({expr_text(ix)}) ranges over [{r[0]}, {r[1]}] but "
                             f"dimension {d} has size {n}: out of bounds")

    def check_expr(self, s: Stmt, e: Expr, scope: set[str], ranges, guarded: bool) -> None:
        for x in iter_exprs(e):
            if isinstance(x, Var):
                if x.name in scope:
                    if x.dtype != "i64":
                        self.fail(s, f"loop variable {x.name} is i64 but is used as {x.dtype}")
                elif x.name in self.scalars:
                    if self.scalars[x.name] != x.dtype:
                        self.fail(s, f"scalar {x.name} is {self.scalars[x.name]} but is used as {x.dtype}")
                else:
                    self.fail(s, f"variable {x.name!r} is used before it is defined (no enclosing loop or earlier "
                                 "assignment defines it)")
            elif isinstance(x, Load):
                self.check_buffer(s, x.buffer, x.indices, ranges, guarded)
            elif isinstance(x, Bin):
                if x.op not in BIN_OPS:
                    self.fail(s, f"unknown binary op {x.op!r}; use one of {BIN_OPS}")
                if x.a.dtype != x.b.dtype:
                    self.fail(s, f"`{expr_text(x)}` mixes {x.a.dtype} and {x.b.dtype}; add a Cast")
                if x.op in ("//", "%") and x.dtype not in INT_DTYPES:
                    self.fail(s, f"`{expr_text(x)}`: {x.op} is for integers; use / or floor() for floats")
                if x.dtype == "bool":
                    self.fail(s, f"`{expr_text(x)}`: arithmetic on bool; use select()")
            elif isinstance(x, Cmp):
                if x.op not in CMP_OPS:
                    self.fail(s, f"unknown comparison {x.op!r}; use one of {CMP_OPS}")
                if x.a.dtype != x.b.dtype:
                    self.fail(s, f"`{expr_text(x)}` compares {x.a.dtype} with {x.b.dtype}; add a Cast")
            elif isinstance(x, Select):
                if x.cond.dtype != "bool" or x.a.dtype != x.b.dtype:
                    self.fail(s, f"`{expr_text(x)}` needs a bool condition and two sides of one dtype")
            elif isinstance(x, Call):
                if x.fn not in CALL_FNS:
                    self.fail(s, f"unknown function {x.fn!r}; use one of {sorted(CALL_FNS)}")
                if len(x.args) != CALL_FNS[x.fn]:
                    self.fail(s, f"{x.fn} takes {CALL_FNS[x.fn]} arguments, got {len(x.args)}")
                if any(a.dtype != x.args[0].dtype for a in x.args):
                    self.fail(s, f"`{expr_text(x)}`: arguments have different dtypes")
                if x.fn not in ("abs", "neg") and x.dtype not in FLOAT_DTYPES:
                    self.fail(s, f"`{expr_text(x)}`: {x.fn} takes floats, got {x.dtype}")
            elif isinstance(x, BitCast):
                widths = {"f32": 32, "i32": 32, "f64": 64, "i64": 64}
                if widths.get(x.to) != widths.get(x.a.dtype):
                    self.fail(s, f"`{expr_text(x)}`: bitcast needs equal widths ({x.a.dtype} -> {x.to})")

    def check_body(self, body, scope: set[str], ranges, guarded: bool) -> None:
        for s in body:
            if isinstance(s, Store):
                if self.bufs.get(s.buffer.name) is not None and self.bufs[s.buffer.name].role == "in":
                    self.fail(s, f"buffer {s.buffer.name} is an input (role 'in') and cannot be written; make it 'out' or 'inout'")
                self.check_buffer(s, s.buffer, s.indices, ranges, guarded)
                self.check_expr(s, s.value, scope, ranges, guarded)
                if s.value.dtype != s.buffer.dtype:
                    self.fail(s, f"stores a {s.value.dtype} value into {s.buffer.dtype} buffer {s.buffer.name}; add a Cast")
            elif isinstance(s, Assign):
                self.check_expr(s, s.value, scope, ranges, guarded)
                if s.var.name in scope or s.var.name in self.bufs:
                    self.fail(s, f"cannot assign to {s.var.name}: it names a loop variable or buffer")
                prev = self.scalars.get(s.var.name)
                if prev is not None and prev != s.var.dtype:
                    self.fail(s, f"scalar {s.var.name} was declared {prev}, now assigned as {s.var.dtype}")
                if s.value.dtype != s.var.dtype:
                    self.fail(s, f"assigns a {s.value.dtype} value to {s.var.dtype} scalar {s.var.name}; add a Cast")
                self.scalars[s.var.name] = s.var.dtype
            elif isinstance(s, Loop):
                v = s.var.name
                if v in scope or v in self.scalars or v in self.bufs:
                    self.fail(s, f"loop variable {v} is already defined in an enclosing scope; rename it")
                if s.var.dtype != "i64":
                    self.fail(s, f"loop variable {v} must be i64, got {s.var.dtype}")
                for b in (s.start, s.stop):
                    self.check_expr(s, b, scope, ranges, guarded)
                    if b.dtype not in INT_DTYPES:
                        self.fail(s, f"loop bound {expr_text(b)} must be an integer")
                if s.kind == "unroll" and s.extent is None:
                    self.fail(s, "an unrolled loop needs constant bounds")
                inner = dict(ranges)
                if s.extent:
                    lo = int(s.start.value)
                    inner[v] = (lo, lo + (s.extent - 1) * s.step)
                self.check_body(s.body, scope | {v}, inner, guarded)
            elif isinstance(s, If):
                self.check_expr(s, s.cond, scope, ranges, guarded)
                if s.cond.dtype != "bool":
                    self.fail(s, "an if condition must be a comparison (bool)")
                self.check_body(s.then, scope, ranges, True)
                self.check_body(s.orelse, scope, ranges, True)
            else:
                raise KernelError(f"kernel {self.k.name}: {s!r} is not a kernel statement")


def verify_kernel(kernel: Kernel) -> Kernel:
    """Raise KernelError naming the first ill-formed statement; return the kernel when it is well formed."""
    if not isinstance(kernel, Kernel):
        raise KernelError(f"expected a Kernel, got {type(kernel).__name__}")
    _Checker(kernel).check_body(kernel.body, set(), {}, False)
    return kernel
