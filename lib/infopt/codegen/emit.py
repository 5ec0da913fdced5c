"""Kernel IR -> LLVM IR text, built with llvmlite's IRBuilder.

The kernel becomes ``void @name(ptr noalias %buf0, ...)`` (plus ``i64 %par_lo, i64 %par_hi`` when
its single top-level loop is ``parallel``: the runtime calls it once per chunk of that loop's range).
Loops are emitted as header/body/latch blocks with a phi for the loop variable; local scalars live in
``alloca`` slots that SROA promotes to SSA values; buffer indices are linearized row-major.
``unroll`` loops are expanded here; ``vectorize`` loops carry ``llvm.loop.vectorize.*`` metadata.
"""
from __future__ import annotations

from typing import Any

from .kernel_ir import (
    Assign, Bin, BitCast, Call, Cast, Cmp, Const, Expr, If, Kernel, KernelError, Load, Loop, Select, Stmt, Store, Var,
)
from .verify import verify_kernel


def _ir():
    import llvmlite.ir as ir

    return ir


def llvm_type(dtype: str):
    """The llvmlite.ir type of a kernel dtype."""
    ir = _ir()
    return {"f32": ir.FloatType(), "f64": ir.DoubleType(), "i32": ir.IntType(32), "i64": ir.IntType(64),
            "bool": ir.IntType(1)}[dtype]


def parallel_loop(kernel: Kernel) -> Loop | None:
    """The kernel's parallel loop, when its body is a single top-level ``parallel`` loop with constant bounds."""
    if len(kernel.body) == 1 and isinstance(kernel.body[0], Loop) and kernel.body[0].kind == "parallel" \
            and kernel.body[0].extent is not None:
        return kernel.body[0]
    return None


class _LoopMD:
    """A placeholder metadata reference, replaced by a self-referencing ``distinct`` node after printing."""

    def __init__(self, idx: int, props: list[str]) -> None:
        self.idx, self.props = idx, props

    def get_reference(self) -> str:
        return f"!{9000 + self.idx}"


class _Emitter:
    def __init__(self, kernel: Kernel) -> None:
        ir = _ir()
        self.ir, self.k = ir, kernel
        self.module = ir.Module(name=kernel.name)
        self.loop_mds: list[_LoopMD] = []
        self.par = parallel_loop(kernel)
        argtys = [ir.PointerType(llvm_type(b.dtype)) for b in kernel.buffers]
        if self.par is not None:
            argtys += [ir.IntType(64), ir.IntType(64)]
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), argtys), name=kernel.name)
        self.bufptr: dict[str, Any] = {}
        for b, arg in zip(kernel.buffers, self.fn.args):
            arg.name = b.name
            arg.add_attribute("noalias")
            self.bufptr[b.name] = arg
        if self.par is not None:
            self.fn.args[-2].name, self.fn.args[-1].name = "par_lo", "par_hi"
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.env: dict[str, Any] = {}
        self.ff = ("reassoc", "contract", "nsz", "arcp") if kernel.fastmath else ()
        self.slots: dict[str, Any] = {}

    # ----- expressions --------------------------------------------------------------------------
    def intrinsic(self, name: str, dtype: str, nargs: int):
        ir = self.ir
        t = llvm_type(dtype)
        return self.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * nargs))

    def libm(self, name: str, dtype: str):
        ir = self.ir
        t = llvm_type(dtype)
        fname = name + ("f" if dtype == "f32" else "")
        if fname in self.module.globals:
            return self.module.globals[fname]
        return ir.Function(self.module, ir.FunctionType(t, [t]), name=fname)

    def index(self, buf, indices) -> Any:
        ir = self.ir
        i64 = ir.IntType(64)
        flat = None
        for ix, stride in zip(indices, buf.strides):
            v = self.expr(ix)
            if v.type != i64:
                v = self.b.sext(v, i64)
            if stride != 1:
                v = self.b.mul(v, ir.Constant(i64, stride), flags=["nsw"])
            flat = v if flat is None else self.b.add(flat, v, flags=["nsw"])
        if flat is None:
            flat = ir.Constant(i64, 0)
        return self.b.gep(self.bufptr[buf.name], [flat], inbounds=True)

    def expr(self, e: Expr) -> Any:
        ir, b = self.ir, self.b
        if isinstance(e, Const):
            return ir.Constant(llvm_type(e.dtype), e.value)
        if isinstance(e, Var):
            if e.name in self.env:
                return self.env[e.name]
            return b.load(self.slots[e.name], name=e.name)
        if isinstance(e, Load):
            return b.load(self.index(e.buffer, e.indices))
        if isinstance(e, Bin):
            x, y = self.expr(e.a), self.expr(e.b)
            fl = e.dtype in ("f32", "f64")
            if e.op in ("max", "min"):
                if fl and self.ff:
                    fn = self.intrinsic("llvm.maxnum" if e.op == "max" else "llvm.minnum", e.dtype, 2)
                    return b.call(fn, [x, y], fastmath=self.ff)
                c = b.fcmp_ordered(">" if e.op == "max" else "<", x, y) if fl else \
                    b.icmp_signed(">" if e.op == "max" else "<", x, y)
                return b.select(c, x, y)
            if fl:
                return {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[e.op](x, y, flags=self.ff)
            flags = ["nsw"]
            if e.op == "+":
                return b.add(x, y, flags=flags)
            if e.op == "-":
                return b.sub(x, y, flags=flags)
            if e.op == "*":
                return b.mul(x, y, flags=flags)
            return {"/": b.sdiv, "//": b.sdiv, "%": b.srem}[e.op](x, y)
        if isinstance(e, Cmp):
            x, y = self.expr(e.a), self.expr(e.b)
            if e.a.dtype in ("f32", "f64"):
                return b.fcmp_ordered(e.op, x, y)
            return b.icmp_signed(e.op, x, y)
        if isinstance(e, Select):
            return b.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))
        if isinstance(e, Call):
            args = [self.expr(a) for a in e.args]
            fl = e.dtype in ("f32", "f64")
            if e.fn == "neg":
                return b.fneg(args[0], flags=self.ff) if fl else b.neg(args[0])
            if e.fn == "abs" and not fl:
                return b.select(b.icmp_signed("<", args[0], ir.Constant(args[0].type, 0)), b.neg(args[0]), args[0])
            names = {"exp": "llvm.exp", "log": "llvm.log", "sqrt": "llvm.sqrt", "abs": "llvm.fabs",
                     "floor": "llvm.floor", "round": "llvm.rint", "fma": "llvm.fma"}
            if e.fn in names:
                return b.call(self.intrinsic(names[e.fn], e.dtype, len(args)), args, fastmath=self.ff if fl else ())
            return b.call(self.libm(e.fn, e.dtype), args)
        if isinstance(e, Cast):
            return self.cast(self.expr(e.a), e.a.dtype, e.to)
        if isinstance(e, BitCast):
            return b.bitcast(self.expr(e.a), llvm_type(e.to))
        raise KernelError(f"kernel {self.k.name}: cannot emit expression {e!r}")

    def cast(self, v, src: str, dst: str):
        b, t = self.b, llvm_type(dst)
        if src == dst:
            return v
        fl = ("f32", "f64")
        if src in fl and dst in fl:
            return b.fpext(v, t) if dst == "f64" else b.fptrunc(v, t)
        if src in fl:
            return b.fptosi(v, t) if dst != "bool" else b.fcmp_ordered("!=", v, self.ir.Constant(v.type, 0))
        if dst in fl:
            return b.uitofp(v, t) if src == "bool" else b.sitofp(v, t)
        if dst == "bool":
            return b.icmp_signed("!=", v, self.ir.Constant(v.type, 0))
        if src == "bool":
            return b.zext(v, t)
        return b.sext(v, t) if t.width > v.type.width else b.trunc(v, t)

    # ----- statements ---------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        b = self.b
        if isinstance(s, Store):
            ptr = self.index(s.buffer, s.indices)
            b.store(self.expr(s.value), ptr)
        elif isinstance(s, Assign):
            b.store(self.expr(s.value), self.slots[s.var.name])
        elif isinstance(s, If):
            cond = self.expr(s.cond)
            if s.orelse:
                with b.if_else(cond) as (then, orelse):
                    with then:
                        self.body(s.then)
                    with orelse:
                        self.body(s.orelse)
            else:
                with b.if_then(cond):
                    self.body(s.then)
        elif isinstance(s, Loop):
            self.loop(s)
        else:
            raise KernelError(f"kernel {self.k.name}: cannot emit statement {s!r}")

    def body(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def loop(self, s: Loop, lo=None, hi=None) -> None:
        ir, b = self.ir, self.b
        i64 = ir.IntType(64)
        name = s.var.name
        if s.kind == "unroll":
            start = int(s.start.value)
            for t in range(s.extent or 0):
                self.env[name] = ir.Constant(i64, start + t * s.step)
                self.body(s.body)
            del self.env[name]
            return
        start = lo if lo is not None else self.expr(s.start)
        stop = hi if hi is not None else self.expr(s.stop)
        pre = b.block
        header = self.fn.append_basic_block(f"{name}.header")
        body = self.fn.append_basic_block(f"{name}.body")
        latch = self.fn.append_basic_block(f"{name}.latch")
        exit_ = self.fn.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        phi = b.phi(i64, name=name)
        phi.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", phi, stop), body, exit_)
        b.position_at_end(body)
        self.env[name] = phi
        self.body(s.body)
        del self.env[name]
        b.branch(latch)
        b.position_at_end(latch)
        nxt = b.add(phi, ir.Constant(i64, s.step), name=f"{name}.next", flags=["nsw"])
        br = b.branch(header)
        phi.add_incoming(nxt, latch)
        props = []
        if s.kind == "vectorize":
            props.append('!{!"llvm.loop.vectorize.enable", i1 true}')
            if "width" in s.ann:
                props.append(f'!{{!"llvm.loop.vectorize.width", i32 {int(s.ann["width"])}}}')
        if props:
            md = _LoopMD(len(self.loop_mds), props)
            self.loop_mds.append(md)
            br.metadata["llvm.loop"] = md
        b.position_at_end(exit_)

    def run(self) -> str:
        # one stack slot per local scalar, in the entry block (SROA turns them into SSA values)
        from .rewrite import assigned_scalars

        for v in assigned_scalars(self.k.body):
            self.slots[v.name] = self.b.alloca(llvm_type(v.dtype), name=f"{v.name}.slot")
        if self.par is not None:
            self.loop(self.par, self.fn.args[-2], self.fn.args[-1])
        else:
            self.body(self.k.body)
        self.b.ret_void()
        text = str(self.module)
        extra = []
        for md in self.loop_mds:
            n = 9000 + md.idx
            ids = []
            for j, p in enumerate(md.props):
                pid = 9500 + 10 * md.idx + j
                extra.append(f"!{pid} = {p}")
                ids.append(f"!{pid}")
            extra.append(f"!{n} = distinct !{{!{n}, {', '.join(ids)}}}")
        return text + ("\n" + "\n".join(extra) + "\n" if extra else "")


def emit_llvm(kernel: Kernel, verify: bool = True) -> str:
    """LLVM IR text for a kernel (verified first, so LLVM only sees well-formed kernels)."""
    if verify:
        verify_kernel(kernel)
    return _Emitter(kernel).run()
