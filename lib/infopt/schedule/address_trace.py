"""The memory-access trace of a kernel: every load and store, in program order, without computing any values.

The kernel's loop nest is translated to a small Python generator program (loop bounds, ``if``
guards on indices and index arithmetic are evaluated; float values are not), so the trace of a
scheduled kernel at small sizes is exact. Scalars (``Assign``) live in registers and make no
traffic. Each entry is (buffer, flat element index, is_write); ``Trace.addresses`` lays the buffers
out one after another (each aligned to ``align`` bytes) to give byte addresses for a cache model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernel_ir import (
    Assign, Bin, BitCast, Call, Cast, Cmp, Const, Expr, If, Kernel, KernelError, Load, Loop, Select, Stmt, Store, Var,
)

ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4, "i64": 8}


class TraceTooLong(KernelError):
    """The trace would exceed the access limit: use smaller sizes (the simulator replays small problems)."""


@dataclass
class Trace:
    """Accesses of one kernel run: ``buffer_ids`` into ``buffers``, flat element ``indices``, ``writes`` flags."""

    buffers: tuple[str, ...]
    buffer_ids: np.ndarray
    indices: np.ndarray
    writes: np.ndarray
    itemsizes: tuple[int, ...]
    sizes: tuple[int, ...]

    def __len__(self) -> int:
        return int(self.indices.size)

    def bases(self, align: int = 4096) -> np.ndarray:
        """Byte address of each buffer's first element, buffers laid out in order, each ``align``-aligned."""
        out, cur = [], 0
        for sz, it in zip(self.sizes, self.itemsizes):
            out.append(cur)
            cur += -(-(sz * it) // align) * align
        return np.array(out, dtype=np.int64)

    def addresses(self, align: int = 4096) -> np.ndarray:
        """Byte address of every access."""
        its = np.array(self.itemsizes, dtype=np.int64)
        return self.bases(align)[self.buffer_ids] + self.indices * its[self.buffer_ids]

    def of(self, buffer: str) -> np.ndarray:
        """A boolean mask of the accesses to ``buffer``."""
        if buffer not in self.buffers:
            raise KeyError(f"no buffer {buffer!r} in the trace; buffers: {self.buffers}")
        return self.buffer_ids == self.buffers.index(buffer)


class _PyGen:
    def __init__(self, k: Kernel) -> None:
        self.k = k
        self.ids = {b.name: n for n, b in enumerate(k.buffers)}
        self.nb = len(k.buffers)
        self.lines: list[str] = []

    def ix(self, e: Expr) -> str:
        if isinstance(e, Const):
            return repr(int(e.value)) if e.dtype not in ("f32", "f64") else repr(float(e.value))
        if isinstance(e, Var):
            return "v_" + e.name
        if isinstance(e, Bin):
            a, b = self.ix(e.a), self.ix(e.b)
            if e.op in ("max", "min"):
                return f"{e.op}({a}, {b})"
            if e.op == "//":
                return f"_tdiv({a}, {b})"
            if e.op == "%":
                return f"_tmod({a}, {b})"
            return f"({a} {e.op} {b})"
        if isinstance(e, Cmp):
            return f"({self.ix(e.a)} {e.op} {self.ix(e.b)})"
        raise KernelError(f"kernel {self.k.name}: the trace needs index/bound/guard expressions made of loop "
                          f"variables and integers, got {e!r}")

    def loads(self, e: Expr, ind: str) -> None:
        """Emit the loads inside ``e`` (operands before the value that uses them)."""
        if isinstance(e, Load):
            for i in e.indices:
                self.loads(i, ind)
            self.emit_access(e.buffer, e.indices, 0, ind)
        elif isinstance(e, (Bin, Cmp)):
            self.loads(e.a, ind)
            self.loads(e.b, ind)
        elif isinstance(e, Select):
            for x in (e.cond, e.a, e.b):
                self.loads(x, ind)
        elif isinstance(e, Call):
            for a in e.args:
                self.loads(a, ind)
        elif isinstance(e, (Cast, BitCast)):
            self.loads(e.a, ind)

    def emit_access(self, buf, indices, w: int, ind: str) -> None:
        flat = " + ".join(f"({self.ix(i)}) * {s}" for i, s in zip(indices, buf.strides)) or "0"
        self.lines.append(f"{ind}_ap((({flat}) * {self.nb} + {self.ids[buf.name]}) * 2 + {w})")

    def stmt(self, s: Stmt, ind: str) -> None:
        if isinstance(s, Store):
            self.loads(s.value, ind)
            for i in s.indices:
                self.loads(i, ind)
            self.emit_access(s.buffer, s.indices, 1, ind)
        elif isinstance(s, Assign):
            self.loads(s.value, ind)
        elif isinstance(s, Loop):
            v = "v_" + s.var.name
            self.lines.append(f"{ind}for {v} in range({self.ix(s.start)}, {self.ix(s.stop)}, {s.step}):")
            self.lines.append(f"{ind}    if len(_out) > _limit: raise _TooLong()")
            for b in s.body:
                self.stmt(b, ind + "    ")
            if not s.body:
                self.lines.append(f"{ind}    pass")
        elif isinstance(s, If):
            self.lines.append(f"{ind}if {self.ix(s.cond)}:")
            for b in s.then or ():
                self.stmt(b, ind + "    ")
            self.lines.append(f"{ind}    pass")
            if s.orelse:
                self.lines.append(f"{ind}else:")
                for b in s.orelse:
                    self.stmt(b, ind + "    ")
        else:
            raise KernelError(f"cannot trace statement {s!r}")


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - b * _tdiv(a, b)


def trace_kernel(kernel: Kernel, max_accesses: int = 4_000_000) -> Trace:
    """Every load and store of one run of ``kernel``, in program order (raises TraceTooLong past ``max_accesses``)."""
    if not isinstance(kernel, Kernel):
        raise KernelError(f"trace_kernel needs a Kernel, got {type(kernel).__name__}")
    g = _PyGen(kernel)
    g.lines.append("def _run():")
    for s in kernel.body:
        g.stmt(s, "    ")
    g.lines.append("    pass")
    out: list[int] = []
    env = {"_out": out, "_ap": out.append, "_limit": int(max_accesses), "_TooLong": TraceTooLong,
           "_tdiv": _tdiv, "_tmod": _tmod}
    exec(compile("\n".join(g.lines), f"<trace {kernel.name}>", "exec"), env)  # noqa: S102 - code we generated
    try:
        env["_run"]()
    except TraceTooLong:
        raise TraceTooLong(f"kernel {kernel.name} makes more than {max_accesses} memory accesses; trace it at "
                           "smaller sizes (e.g. 32-64 per dimension) or raise max_accesses") from None
    codes = np.fromiter(out, dtype=np.int64, count=len(out))
    w = (codes & 1).astype(bool)
    rest = codes >> 1
    nb = len(kernel.buffers)
    return Trace(tuple(b.name for b in kernel.buffers), (rest % nb).astype(np.int64), rest // nb, w,
                 tuple(ITEMSIZE[b.dtype] for b in kernel.buffers), tuple(b.size for b in kernel.buffers))
