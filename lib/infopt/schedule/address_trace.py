"""The memory-access trace of a kernel: every load and store, in program order, without computing any values.

The kernel's loop nest is translated to a small Python generator program (loop bounds, ``if``
guards on indices and index arithmetic are evaluated; float values are not), so the trace of a
scheduled kernel at small sizes is exact. Scalars (``Assign``) live in registers and make no
traffic. Each entry is (buffer, flat element index, is_write); ``Trace.addresses`` lays the buffers
out one after another (each aligned to ``align`` bytes) to give byte addresses for a cache model.
The kernel is verified first; an access the bounds prover could not decide is checked as it is traced
(``OutOfBoundsError``, as the compiled kernel would raise).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codegen.bounds import BoundsReport
from ..codegen.expr import Buffer, Expr, KernelError, Load
from ..codegen.kernel_ir import Assign, If, Kernel, Loop, Stmt, Store
from ..codegen.kernel_verify import check_kernel
from ..codegen.py_index import NAMESPACE, VAR_PREFIX, index_source
from ..codegen.walk import iter_postorder

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

    def touch_windows(self, shapes: dict[str, tuple[int, int]], windows: int = 40) -> dict[str, np.ndarray]:
        """Per 2-D buffer, an array (windows, rows, cols): 2 = touched in that time window, 1 = earlier, 0 = not yet.

        The run is cut into ``windows`` equal stretches of accesses (what the tiling explorer animates).
        """
        n = len(self)
        edges = np.linspace(0, n, windows + 1).astype(int)
        out = {}
        for name, (r, c) in shapes.items():
            mask = self.of(name)
            pos = np.nonzero(mask)[0]
            idx = self.indices[mask]
            z = np.zeros((windows, r * c), np.int8)
            seen = np.zeros(r * c, bool)
            for f in range(windows):
                sel = (pos >= edges[f]) & (pos < edges[f + 1])
                now = np.zeros(r * c, bool)
                now[idx[sel]] = True
                z[f] = np.where(now, 2, np.where(seen, 1, 0))
                seen |= now
            out[name] = z.reshape(windows, r, c)
        return out


class _PyGen:
    """Kernel -> the source of a Python function that appends one code per access (no values computed)."""

    def __init__(self, k: Kernel, report: BoundsReport) -> None:
        self.k = k
        self.ids = {b.name: n for n, b in enumerate(k.buffers)}
        self.nb = len(k.buffers)
        self.lines: list[str] = []
        self.path: list[int] = []
        self.checked = {site.key: n for n, site in enumerate(report.checked_sites)}

    def ix(self, e: Expr) -> str:
        try:
            return index_source(e, "trace")
        except KernelError as err:
            raise KernelError(f"kernel {self.k.name}: {err} (index, bound and guard expressions)") from None

    def loads(self, e: Expr, ind: str) -> None:
        """Emit the loads inside ``e`` (operands before the value that uses them)."""
        for x in iter_postorder(e):
            if isinstance(x, Load):
                self.emit_access(x.buffer, x.indices, 0, ind, x)

    def emit_access(self, buf: Buffer, indices, w: int, ind: str, load: Load | None) -> None:
        site = self.checked.get((tuple(self.path), load))
        if site is not None:
            ix = ", ".join(self.ix(i) for i in indices)
            inside = " and ".join(f"0 <= _i[{d}] < {n}" for d, n in enumerate(buf.shape))
            self.lines.append(f"{ind}_i = ({ix},)")
            self.lines.append(f"{ind}if not ({inside}): _oob({site}, _i, locals())")
        flat = " + ".join(f"({self.ix(i)}) * {s}" for i, s in zip(indices, buf.strides)) or "0"
        self.lines.append(f"{ind}_ap((({flat}) * {self.nb} + {self.ids[buf.name]}) * 2 + {w})")

    def body(self, stmts, ind: str, first: int = 0) -> None:
        for n, s in enumerate(stmts):
            self.path.append(first + n)
            self.stmt(s, ind)
            self.path.pop()

    def stmt(self, s: Stmt, ind: str) -> None:
        if isinstance(s, Store):
            self.loads(s.value, ind)
            for i in s.indices:
                self.loads(i, ind)
            self.emit_access(s.buffer, s.indices, 1, ind, None)
        elif isinstance(s, Assign):
            self.loads(s.value, ind)
        elif isinstance(s, Loop):
            v = VAR_PREFIX + s.var.name
            self.lines.append(f"{ind}for {v} in range({self.ix(s.start)}, {self.ix(s.stop)}, {s.step}):")
            self.lines.append(f"{ind}    if len(_out) > _limit: raise _TooLong()")
            self.body(s.body, ind + "    ")
            if not s.body:
                self.lines.append(f"{ind}    pass")
        elif isinstance(s, If):
            self.lines.append(f"{ind}if {self.ix(s.cond)}:")
            self.body(s.then, ind + "    ")
            self.lines.append(f"{ind}    pass")
            if s.orelse:
                self.lines.append(f"{ind}else:")
                self.body(s.orelse, ind + "    ", len(s.then))
        else:
            raise KernelError(f"cannot trace statement {s!r}")


def trace_kernel(kernel: Kernel, max_accesses: int = 4_000_000) -> Trace:
    """Every load and store of one run of ``kernel``, in program order (raises TraceTooLong past ``max_accesses``)."""
    if not isinstance(kernel, Kernel):
        raise KernelError(f"trace_kernel needs a Kernel, got {type(kernel).__name__}")
    report = check_kernel(kernel)
    g = _PyGen(kernel, report)
    g.lines.append("def _run():")
    g.body(kernel.body, "    ")
    g.lines.append("    pass")
    out: list[int] = []

    def oob(site: int, index: tuple, scope: dict) -> None:
        record = [site + 1, *index]
        record += [0] * (1 + report.index_slots - len(record))
        record += [scope[VAR_PREFIX + v] for v in report.checked_sites[site].loop_vars]
        raise report.runtime_error(record)

    env = {"_out": out, "_ap": out.append, "_limit": int(max_accesses), "_TooLong": TraceTooLong, "_oob": oob,
           **NAMESPACE}
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
