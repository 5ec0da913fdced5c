"""Well-formedness of a kernel, checked before LLVM sees it, with errors that name the statement.

Checked: every buffer a statement touches is a kernel argument with that shape and dtype; index counts
match ranks; indices are integers; each expression node obeys its own typing rule (``type_error``);
variables are defined before use; loops do not reuse an enclosing loop's variable; ``in`` buffers are
not written; and every load and store is inside its buffer (``infopt.codegen.bounds``: proven from the
loop bounds and guards, or rejected with the loop values where it goes out of bounds; the few accesses
that cannot be decided are compiled with a run-time check).
"""
from __future__ import annotations

from .bounds import BoundsReport, prove_bounds
from .expr import INT_DTYPES, Buffer, Expr, KernelError, Load, Var
from .kernel_ir import Assign, If, Kernel, Loop, Stmt, Store
from .walk import iter_exprs, iter_scoped


class _Checker:
    def __init__(self, k: Kernel) -> None:
        self.k = k
        self.bufs = {b.name: b for b in k.buffers}
        self.scalars: dict[str, str] = {}

    def fail(self, s: Stmt, msg: str) -> None:
        raise KernelError(f"kernel {self.k.name}, statement `{s.head}`: {msg}")

    def check_access(self, s: Stmt, buf: Buffer, indices: tuple[Expr, ...]) -> None:
        known = self.bufs.get(buf.name)
        if known is None:
            self.fail(s, f"buffer {buf.name!r} is not an argument of the kernel (arguments: {list(self.bufs)}); "
                         "add it to Kernel(buffers=...)")
        if known != buf:
            self.fail(s, f"buffer {buf.name} is used as {buf} but the kernel declares it as {known}")
        if len(indices) != buf.rank:
            self.fail(s, f"buffer {buf.name} has rank {buf.rank} (shape {buf.shape}) but is indexed with "
                         f"{len(indices)} indices [{', '.join(i.text() for i in indices)}]")
        for d, ix in enumerate(indices):
            if ix.dtype not in INT_DTYPES:
                self.fail(s, f"index {d} of {buf.name} ({ix.text()}) has dtype {ix.dtype}; indices must be integers")

    def check_expr(self, s: Stmt, e: Expr, scope: set[str]) -> None:
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
                self.check_access(s, x.buffer, x.indices)
            problem = x.type_error()
            if problem:
                self.fail(s, problem)

    def check_stmt(self, s: Stmt, scope: set[str]) -> None:
        for e in s.exprs:
            self.check_expr(s, e, scope)
        if isinstance(s, Store):
            if self.bufs.get(s.buffer.name) is not None and self.bufs[s.buffer.name].role == "in":
                self.fail(s, f"buffer {s.buffer.name} is an input (role 'in') and cannot be written; make it 'out' or 'inout'")
            self.check_access(s, s.buffer, s.indices)
            if s.value.dtype != s.buffer.dtype:
                self.fail(s, f"stores a {s.value.dtype} value into {s.buffer.dtype} buffer {s.buffer.name}; add a Cast")
        elif isinstance(s, Assign):
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
                if b.dtype not in INT_DTYPES:
                    self.fail(s, f"loop bound {b.text()} must be an integer")
            if s.kind == "unroll" and s.extent is None:
                self.fail(s, "an unrolled loop needs constant bounds")
        elif isinstance(s, If):
            if s.cond.dtype != "bool":
                self.fail(s, "an if condition must be a comparison (bool)")

    def run(self) -> None:
        for s, _, ancestors in iter_scoped(self.k.body):
            if not isinstance(s, Stmt):
                raise KernelError(f"kernel {self.k.name}: {s!r} is not a kernel statement")
            scope = {a.bound_var.name for a, _ in ancestors if a.bound_var is not None}
            self.check_stmt(s, scope)


def check_kernel(kernel: Kernel) -> BoundsReport:
    """Verify ``kernel`` (KernelError naming the first ill-formed statement, OutOfBoundsError for an access
    proven out of bounds) and return the bounds report, whose unproven accesses the backend checks at run time."""
    if not isinstance(kernel, Kernel):
        raise KernelError(f"expected a Kernel, got {type(kernel).__name__}")
    _Checker(kernel).run()
    report = prove_bounds(kernel)
    err = report.error()
    if err is not None:
        raise err
    return report


def verify_kernel(kernel: Kernel) -> Kernel:
    """Raise KernelError naming the first ill-formed statement or out-of-bounds access; return the kernel when it is sound."""
    check_kernel(kernel)
    return kernel
