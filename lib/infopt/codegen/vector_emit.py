"""Explicit vectorization: a loop marked ``vectorize(..., explicit=True)`` is emitted with LLVM vector types.

The backend's ordinary ``vectorize`` loops only *ask* LLVM's loop vectorizer (metadata). Here the
emitter itself widens the loop: the main part steps by ``width`` and every statement becomes one
``<width x float>`` operation — contiguous loads/stores (``x[..., v]``, stride 1 in the last index)
become vector loads/stores, loop-invariant operands become broadcasts (splats), float arithmetic,
``max``/``min``, ``select`` and ``fma``/``sqrt``/``abs``/``exp`` become vector instructions — and a
scalar loop finishes the remainder. Strided or gathered accesses, reductions and local scalars
inside the loop are refused with a ``KernelError`` (use the loop vectorizer for those).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .affine import affine
from .bounds import BoundsReport
from .emit import LLVMEmitter, llvm_type
from .expr import Bin, Call, Cmp, Expr, KernelError, Load, Select, Var, index_text
from .kernel_ir import Assign, Kernel, Loop, Stmt, Store
from .kernel_verify import check_kernel
from .walk import iter_exprs

VECTOR_CALLS = {"exp": "llvm.exp", "sqrt": "llvm.sqrt", "abs": "llvm.fabs", "fma": "llvm.fma", "floor": "llvm.floor"}


def _mentions(e: Expr, name: str) -> bool:
    return any(isinstance(x, Var) and x.name == name for x in iter_exprs(e))


class VectorEmitter(LLVMEmitter):
    """The kernel emitter, plus explicit vector code for loops annotated ``explicit=True``."""

    def __init__(self, kernel: Kernel, report: BoundsReport) -> None:
        super().__init__(kernel, report)
        self.vec: tuple[str, int] | None = None

    def _require_proven(self, load: Load | None, text: str) -> None:
        key = self.access_key(load)
        if key is not None and key in self.checked:
            raise KernelError(f"explicit vectorization of {self.vec[0]}: {text} could not be proven in bounds, and a "
                              "vector access cannot be bounds-checked lane by lane; use vectorize() without explicit=True")

    # ----- loops --------------------------------------------------------------------------------
    def loop(self, s: Loop, lo=None, hi=None) -> None:
        if not (s.kind == "vectorize" and s.ann.get("explicit")):
            return super().loop(s, lo, hi)
        if self.vec is not None:
            raise KernelError(f"loop {s.var.name}: explicit vectorization cannot nest inside another vector loop")
        if s.step != 1 or any(isinstance(b, Loop) for b in s.body):
            raise KernelError(f"loop {s.var.name}: explicit vectorization needs an innermost loop with step 1")
        w = int(s.ann.get("width", 8))
        n = s.stop - s.start
        main_stop = s.start + (n // w) * w
        main = replace(s, kind="serial", step=w, stop=main_stop, annotations=())
        self.vec = (s.var.name, w)
        try:
            super().loop(main)
        finally:
            self.vec = None
        super().loop(replace(s, kind="serial", start=main_stop, annotations=()))

    # ----- statements ---------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        if self.vec is None:
            return super().stmt(s)
        var, w = self.vec
        if isinstance(s, Store):
            if not self._contiguous(s.indices, var):
                raise KernelError(f"explicit vectorization of {var}: the store to {s.buffer.name}"
                                  f"{index_text(s.indices)} is not contiguous in {var} "
                                  "(a reduction or a strided store); use vectorize() without explicit=True")
            self._require_proven(None, f"the store to {s.buffer.name}{index_text(s.indices)}")
            value = self._vector(self.vexpr(s.value), s.value.dtype)
            ptr = self._vptr(s.buffer, s.indices)
            self.b.store(value, ptr, align=4 if s.buffer.dtype == "f32" else 8)
            return None
        if isinstance(s, Assign):
            raise KernelError(f"explicit vectorization of {var}: local scalar {s.var.name} inside the loop is not "
                              "supported; write the value to a buffer or inline it")
        raise KernelError(f"explicit vectorization of {var}: cannot widen {type(s).__name__} statements")

    # ----- expressions --------------------------------------------------------------------------
    def _contiguous(self, indices, var: str) -> bool:
        forms = [affine(i) for i in indices]
        if any(f is None for f in forms):
            return False
        return all(f.get(var, 0) == 0 for f in forms[:-1]) and forms[-1].get(var, 0) == 1

    def _vtype(self, dtype: str):
        return self.ir.VectorType(llvm_type(dtype), self.vec[1])

    def _vptr(self, buf, indices):
        return self.b.bitcast(self.index(buf, indices), self.ir.PointerType(self._vtype(buf.dtype)))

    def _vector(self, v: tuple[Any, bool], dtype: str):
        """The value as a vector: splat a scalar (insertelement + shufflevector)."""
        val, is_vec = v
        if is_vec:
            return val
        ir, w = self.ir, self.vec[1]
        vt = self._vtype(dtype)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), val, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))

    def vexpr(self, e: Expr) -> tuple[Any, bool]:
        """(LLVM value, is_vector) for ``e`` inside a vector loop."""
        var, w = self.vec
        b = self.b
        if not _mentions(e, var):
            return self.expr(e), False
        if isinstance(e, Load):
            if not self._contiguous(e.indices, var):
                raise KernelError(f"explicit vectorization of {var}: {e.text()} is not contiguous in {var}")
            self._require_proven(e, f"the load {e.text()}")
            return b.load(self._vptr(e.buffer, e.indices), align=4 if e.buffer.dtype == "f32" else 8), True
        if e.dtype not in ("f32", "f64", "bool"):
            raise KernelError(f"explicit vectorization of {var}: {e.text()} uses the loop index as a value; "
                              "only float data can be widened")
        if isinstance(e, Bin):
            x = self._vector(self.vexpr(e.a), e.dtype)
            y = self._vector(self.vexpr(e.b), e.dtype)
            if e.op in ("max", "min"):
                c = b.fcmp_ordered(">" if e.op == "max" else "<", x, y)
                return b.select(c, x, y), True
            return {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[e.op](x, y, flags=self.ff), True
        if isinstance(e, Cmp):
            dt = e.a.dtype
            return b.fcmp_ordered(e.op, self._vector(self.vexpr(e.a), dt), self._vector(self.vexpr(e.b), dt)), True
        if isinstance(e, Select):
            cond = self.vexpr(e.cond)
            if not cond[1]:
                cond = (self._splat_bool(cond[0]), True)
            return b.select(cond[0], self._vector(self.vexpr(e.a), e.dtype), self._vector(self.vexpr(e.b), e.dtype)), True
        if isinstance(e, Call):
            args = [self._vector(self.vexpr(a), e.dtype) for a in e.args]
            if e.fn == "neg":
                return b.fneg(args[0], flags=self.ff), True
            if e.fn not in VECTOR_CALLS:
                raise KernelError(f"explicit vectorization of {var}: no vector form of {e.fn}; use one of "
                                  f"{sorted(VECTOR_CALLS)} or the loop vectorizer")
            vt = self._vtype(e.dtype)
            name = f"{VECTOR_CALLS[e.fn]}.v{w}{'f32' if e.dtype == 'f32' else 'f64'}"
            fn = self.module.globals.get(name) or self.ir.Function(self.module, self.ir.FunctionType(vt, [vt] * len(args)), name=name)
            return b.call(fn, args, fastmath=self.ff), True
        raise KernelError(f"explicit vectorization of {var}: cannot widen {e.text()}")

    def _splat_bool(self, val):
        ir, w = self.ir, self.vec[1]
        vt = ir.VectorType(ir.IntType(1), w)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), val, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))


def emit_vector_llvm(kernel: Kernel) -> str:
    """LLVM IR text for ``kernel`` with its ``explicit`` vectorize loops widened to vector types."""
    return VectorEmitter(kernel, check_kernel(kernel)).run()
