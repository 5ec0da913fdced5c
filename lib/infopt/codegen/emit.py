"""Kernel IR -> LLVM IR text, built with llvmlite's IRBuilder.

The kernel becomes ``void @name(ptr noalias %buf0, ...)`` (plus ``i64 %par_lo, i64 %par_hi`` when
its single top-level loop is ``parallel``: the runtime calls it once per chunk of that loop's range).
Loops are emitted as header/body/latch blocks with a phi for the loop variable; local scalars live in
``alloca`` slots that SROA promotes to SSA values; buffer indices are linearized row-major.
``unroll`` loops are expanded here; ``vectorize`` loops carry ``llvm.loop.vectorize.*`` metadata.
Accesses the bounds prover could not decide (``infopt.codegen.bounds``) get a check: when an index is outside
its dimension the function writes (site id + 1, the indices, the loop values) into an extra ``i64*``
argument (the last one) and returns, so ``CompiledKernel`` can raise ``OutOfBoundsError``. Proven accesses,
which are all of them in the kernels the library builds, are emitted with no check.
"""
from __future__ import annotations

from typing import Any

from .bounds import BoundsReport
from .expr import Bin, BitCast, Buffer, Call, Cast, Cmp, Const, Expr, KernelError, Load, Select, Var
from .kernel_ir import Assign, If, Kernel, Loop, Stmt, Store
from .kernel_verify import check_kernel
from .walk import assigned_scalars


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


class LLVMEmitter:
    """Kernel IR -> an llvmlite module: one ``void`` function, with checks at the accesses ``report`` left unproven."""

    def __init__(self, kernel: Kernel, report: BoundsReport) -> None:
        ir = _ir()
        self.ir, self.k = ir, kernel
        self.module = ir.Module(name=kernel.name)
        self.loop_mds: list[_LoopMD] = []
        self.par = parallel_loop(kernel)
        self.sites = report.checked_sites
        self.index_slots = report.index_slots
        self.checked = {site.key: n for n, site in enumerate(self.sites, 1)}
        self.path: list[int] = []
        argtys = [ir.PointerType(llvm_type(b.dtype)) for b in kernel.buffers]
        if self.par is not None:
            argtys += [ir.IntType(64), ir.IntType(64)]
        if self.checked:
            argtys.append(ir.PointerType(ir.IntType(64)))
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), argtys), name=kernel.name)
        self.bufptr: dict[str, Any] = {}
        for b, arg in zip(kernel.buffers, self.fn.args):
            arg.name = b.name
            arg.add_attribute("noalias")
            self.bufptr[b.name] = arg
        if self.par is not None:
            self.fn.args[len(kernel.buffers)].name, self.fn.args[len(kernel.buffers) + 1].name = "par_lo", "par_hi"
        if self.checked:
            self.fn.args[-1].name = "oob"
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.env: dict[str, Any] = {}
        self.ff = ("reassoc", "contract", "nsz", "arcp") if kernel.fastmath else ()
        self.slots: dict[str, Any] = {}

    # ----- expressions --------------------------------------------------------------------------
    def intrinsic(self, name: str, dtype: str, nargs: int):
        """The declaration of LLVM intrinsic ``name`` overloaded on ``dtype``, taking ``nargs`` arguments."""
        ir = self.ir
        t = llvm_type(dtype)
        return self.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * nargs))

    def libm(self, name: str, dtype: str):
        """The declaration of libm's ``name`` (``namef`` for f32), for functions LLVM has no intrinsic for."""
        ir = self.ir
        t = llvm_type(dtype)
        fname = name + ("f" if dtype == "f32" else "")
        if fname in self.module.globals:
            return self.module.globals[fname]
        return ir.Function(self.module, ir.FunctionType(t, [t]), name=fname)

    def index(self, buf: Buffer, indices, key: tuple | None = None) -> Any:
        """A pointer to ``buf[indices]`` (row-major), checked first when ``key`` names an unproven access."""
        ir = self.ir
        i64 = ir.IntType(64)
        site = self.checked.get(key) if key is not None else None
        values = [] if site is not None else None
        flat = None
        for ix, stride in zip(indices, buf.strides):
            v = self.expr(ix)
            if v.type != i64:
                v = self.b.sext(v, i64)
            if values is not None:
                values.append(v)
                continue
            if stride != 1:
                v = self.b.mul(v, ir.Constant(i64, stride), flags=["nsw"])
            flat = v if flat is None else self.b.add(flat, v, flags=["nsw"])
        if values is not None:
            self.bounds_check(site, buf, values)
            for v, stride in zip(values, buf.strides):
                if stride != 1:
                    v = self.b.mul(v, ir.Constant(i64, stride), flags=["nsw"])
                flat = v if flat is None else self.b.add(flat, v, flags=["nsw"])
        if flat is None:
            flat = ir.Constant(i64, 0)
        return self.b.gep(self.bufptr[buf.name], [flat], inbounds=True)

    def access_key(self, load: Load | None) -> tuple | None:
        """How the bounds report names the access being emitted: (statement path, the load or None for a store);
        None when the kernel has no checked access."""
        return (tuple(self.path), load) if self.checked else None

    def bounds_check(self, site_id: int, buf: Buffer, values: list) -> None:
        """Branch out when an index is outside its dimension: write the report and return from the kernel."""
        ir, b = self.ir, self.b
        i64 = ir.IntType(64)
        ok = None
        for v, n in zip(values, buf.shape):
            c = b.icmp_unsigned("<", v, ir.Constant(i64, n))
            ok = c if ok is None else b.and_(ok, c)
        if ok is None:
            return
        fail = self.fn.append_basic_block(f"oob.{site_id}")
        cont = self.fn.append_basic_block(f"inbounds.{site_id}")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        site = self.sites[site_id - 1]
        slots = [(0, ir.Constant(i64, site_id))] + list(enumerate(values, 1))
        for n, name in enumerate(site.loop_vars):
            v = self.env[name]
            slots.append((1 + self.index_slots + n, v if v.type == i64 else b.sext(v, i64)))
        for pos, v in slots:
            b.store(v, b.gep(self.fn.args[-1], [ir.Constant(i64, pos)], inbounds=True))
        b.ret_void()
        b.position_at_end(cont)

    def expr(self, e: Expr) -> Any:
        """The LLVM value of an expression, emitted at the builder's position."""
        ir, b = self.ir, self.b
        if isinstance(e, Const):
            return ir.Constant(llvm_type(e.dtype), e.value)
        if isinstance(e, Var):
            if e.name in self.env:
                return self.env[e.name]
            return b.load(self.slots[e.name], name=e.name)
        if isinstance(e, Load):
            return b.load(self.index(e.buffer, e.indices, self.access_key(e)))
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
        """``v`` converted from kernel dtype ``src`` to ``dst`` (C semantics: float->int truncates)."""
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
        """Emit one statement."""
        b = self.b
        if isinstance(s, Store):
            ptr = self.index(s.buffer, s.indices, self.access_key(None))
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
                        self.body(s.orelse, len(s.then))
            else:
                with b.if_then(cond):
                    self.body(s.then)
        elif isinstance(s, Loop):
            self.loop(s)
        else:
            raise KernelError(f"kernel {self.k.name}: cannot emit statement {s!r}")

    def body(self, stmts, first: int = 0) -> None:
        """Emit a statement list; ``first`` is the path position of its first statement (an else-branch follows
        its then-branch)."""
        for n, s in enumerate(stmts):
            self.path.append(first + n)
            self.stmt(s)
            self.path.pop()

    def loop(self, s: Loop, lo=None, hi=None) -> None:
        """Emit a loop (header/body/latch blocks, a phi for its variable); ``lo``/``hi`` override its bounds."""
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
        """The module's LLVM IR text (loop metadata appended as self-referencing distinct nodes)."""
        # one stack slot per local scalar, in the entry block (SROA turns them into SSA values)
        for v in assigned_scalars(self.k.body):
            self.slots[v.name] = self.b.alloca(llvm_type(v.dtype), name=f"{v.name}.slot")
        if self.par is not None:
            nb = len(self.k.buffers)
            self.path = [0]
            self.loop(self.par, self.fn.args[nb], self.fn.args[nb + 1])
            self.path = []
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


def emit_llvm(kernel: Kernel) -> str:
    """LLVM IR text for a kernel (verified first, so LLVM only sees well-formed kernels)."""
    return LLVMEmitter(kernel, check_kernel(kernel)).run()
