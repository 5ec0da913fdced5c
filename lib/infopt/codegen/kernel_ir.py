"""The loop-nest kernel IR: buffers, loops, loads/stores with affine indices, scalar arithmetic.

Data model (every node is an immutable dataclass; rewrite with ``dataclasses.replace`` or the
helpers in ``infopt.codegen.rewrite``):

- ``Buffer(name, shape, dtype, role)``: a named, C-contiguous array the kernel reads or writes.
  ``role`` is ``"in"``, ``"out"``, ``"inout"`` or ``"temp"`` (scratch the caller allocates, e.g. a
  packed panel). The kernel's arguments are its buffers, in order. ``buf[i, j]`` builds a ``Load``.
- Expressions (``Expr``, each with a ``dtype``: ``f32 f64 i32 i64 bool``):
  ``Const(value, dtype)``, ``Var(name, dtype)`` (a loop variable, always ``i64``, or a local scalar),
  ``Load(buffer, indices)``, ``Bin(op, a, b)`` with op in ``+ - * / // % max min`` (``//``, ``%``
  are integer division and remainder with C semantics (truncating; index math keeps them nonnegative)), ``Cmp(op, a, b)`` (bool),
  ``Select(cond, a, b)``, ``Call(fn, args)`` for math functions (``exp log sqrt abs neg floor
  round fma tanh``), ``Cast(dtype, a)`` (value conversion) and ``BitCast(dtype, a)`` (same bits).
  Python operators build them: ``A[i, k] * B[k, j] + 1.0``. Index expressions are integer
  expressions of loop variables and constants; affine ones (``i*4 + j``) are what analyses expect.
- Statements (``Stmt``): ``Loop(var, start, stop, step, body, kind, annotations)`` iterates
  ``var = start, start+step, ... < stop``; ``kind`` is ``"serial"``, ``"unroll"`` (the backend
  emits the body once per iteration; bounds must be constant), ``"vectorize"`` (LLVM loop metadata
  asks for vectorization, ``annotations["width"]`` for a width) or ``"parallel"`` (when it is the
  kernel's only top-level statement, with constant bounds, the runtime splits its range across
  threads; a parallel loop anywhere else runs serially). ``start``/``stop`` may be expressions of outer
  loop variables (and ``min`` for tails). ``Store(buffer, indices, value)``; ``Assign(var, value)``
  sets a local scalar (first assignment declares it; reductions accumulate into one);
  ``If(cond, then, orelse)``.
- ``Kernel(name, buffers, body, fastmath)``: the unit the backend compiles to one LLVM function.
  ``fastmath=True`` lets LLVM reassociate float math (``reassoc contract nsz arcp`` flags), which it
  needs to vectorize float reductions (a sum or max over a row); results then differ in rounding.

``print(kernel)`` shows the text form. ``infopt.codegen.verify_kernel`` checks well-formedness.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, Union

import numpy as np

FLOAT_DTYPES = ("f32", "f64")
INT_DTYPES = ("i32", "i64")
KERNEL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
BIN_OPS = ("+", "-", "*", "/", "//", "%", "max", "min")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
CALL_FNS = {"exp": 1, "log": 1, "sqrt": 1, "abs": 1, "neg": 1, "floor": 1, "round": 1, "tanh": 1, "fma": 3}
LOOP_KINDS = ("serial", "unroll", "vectorize", "parallel")
BUFFER_ROLES = ("in", "out", "inout", "temp")


class KernelError(ValueError):
    """An ill-formed kernel; the message names the statement at fault and what to change."""


def _dtype_of_python(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "i64"
    return "f32"


def as_expr(v: "Expr | int | float", like: "str | None" = None) -> "Expr":
    """Wrap a Python number as a Const (of dtype ``like`` when given); pass Exprs through."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, (int, float, bool, np.number, np.bool_)):
        dt = like or _dtype_of_python(v)
        if dt in INT_DTYPES and isinstance(v, (float, np.floating)) and float(v) != int(v):
            raise KernelError(f"constant {v} is not an integer but is used where {dt} is expected")
        return Const(v, dt)
    raise KernelError(f"cannot use {v!r} ({type(v).__name__}) as a kernel expression; use a number or an Expr")


class Expr:
    """Base of kernel-IR expressions; Python operators build ``Bin`` nodes, coercing numbers to the other side's dtype."""

    dtype: str

    def _bin(self, op: str, other: Any, rev: bool = False) -> "Bin":
        o = as_expr(other, like=self.dtype)
        return Bin(op, o, self) if rev else Bin(op, self, o)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __floordiv__(self, o): return self._bin("//", o)
    def __mod__(self, o): return self._bin("%", o)
    def __neg__(self): return Call("neg", (self,))

    def __str__(self) -> str:
        from .printer import expr_text

        return expr_text(self)


@dataclass(frozen=True, eq=True, repr=False)
class Const(Expr):
    """A literal number of a given dtype."""

    value: Any
    dtype: str = "f32"

    def __post_init__(self) -> None:
        if self.dtype not in KERNEL_DTYPES:
            raise KernelError(f"constant {self.value!r}: unknown dtype {self.dtype!r}; use one of {KERNEL_DTYPES}")
        cast = float if self.dtype in FLOAT_DTYPES else (bool if self.dtype == "bool" else int)
        object.__setattr__(self, "value", cast(self.value))

    def __repr__(self) -> str:
        return f"Const({self.value!r}, {self.dtype!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Var(Expr):
    """A loop variable (i64) or a local scalar, by name."""

    name: str
    dtype: str = "i64"

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.dtype!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Load(Expr):
    """``buffer[indices]``: one element read."""

    buffer: "Buffer"
    indices: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(as_expr(i, "i64") for i in self.indices))

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.buffer.dtype

    def __repr__(self) -> str:
        return f"Load({self.buffer.name}, {list(self.indices)})"


@dataclass(frozen=True, eq=True, repr=False)
class Bin(Expr):
    """``a op b`` for op in + - * / // % max min; both sides have the same dtype."""

    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.a.dtype

    def __repr__(self) -> str:
        return f"Bin({self.op!r}, {self.a!r}, {self.b!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Cmp(Expr):
    """``a op b`` for op in < <= > >= == !=; a bool."""

    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return "bool"


@dataclass(frozen=True, eq=True, repr=False)
class Select(Expr):
    """``cond ? a : b`` without branches (vectorizes)."""

    cond: Expr
    a: Expr
    b: Expr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.a.dtype


@dataclass(frozen=True, eq=True, repr=False)
class Call(Expr):
    """A math function (exp log sqrt abs neg floor round tanh fma) applied to float arguments."""

    fn: str
    args: tuple[Expr, ...]

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.args[0].dtype if self.args else "f32"


@dataclass(frozen=True, eq=True, repr=False)
class Cast(Expr):
    """Value conversion to ``dtype`` (float<->int truncates toward zero, like C)."""

    to: str
    a: Expr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.to


@dataclass(frozen=True, eq=True, repr=False)
class BitCast(Expr):
    """Reinterpret the bits of ``a`` as ``dtype`` (same width: f32<->i32, f64<->i64)."""

    to: str
    a: Expr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.to


def maximum(a: Any, b: Any) -> Bin:
    """``max(a, b)``."""
    a = as_expr(a, like=b.dtype if isinstance(b, Expr) else None)
    return Bin("max", a, as_expr(b, like=a.dtype))


def minimum(a: Any, b: Any) -> Bin:
    """``min(a, b)``."""
    a = as_expr(a, like=b.dtype if isinstance(b, Expr) else None)
    return Bin("min", a, as_expr(b, like=a.dtype))


def cmp(op: str, a: Any, b: Any) -> Cmp:
    """A comparison ``a op b`` (numbers take the other side's dtype)."""
    a = as_expr(a, like=b.dtype if isinstance(b, Expr) else None)
    return Cmp(op, a, as_expr(b, like=a.dtype))


def call(fn: str, *args: Any) -> Call:
    """A math-function call, e.g. ``call("exp", x)``."""
    first = next((a for a in args if isinstance(a, Expr)), None)
    like = first.dtype if first is not None else None
    return Call(fn, tuple(as_expr(a, like) for a in args))


def select(cond: Expr, a: Any, b: Any) -> Select:
    """``cond ? a : b``."""
    a = as_expr(a, like=b.dtype if isinstance(b, Expr) else None)
    return Select(cond, a, as_expr(b, like=a.dtype))


# ----- buffers, statements, kernels ---------------------------------------------------------------
@dataclass(frozen=True)
class Buffer:
    """A named C-contiguous array argument of a kernel: shape, dtype and role (in/out/inout/temp)."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "f32"
    role: str = "in"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dtype not in FLOAT_DTYPES + INT_DTYPES:
            raise KernelError(f"buffer {self.name}: dtype {self.dtype!r} is not supported; use one of {FLOAT_DTYPES + INT_DTYPES}")
        if self.role not in BUFFER_ROLES:
            raise KernelError(f"buffer {self.name}: role {self.role!r} is not one of {BUFFER_ROLES}")
        if not self.name.isidentifier():
            raise KernelError(f"buffer name {self.name!r} must be an identifier")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def strides(self) -> tuple[int, ...]:
        """Row-major element strides."""
        out, acc = [], 1
        for d in reversed(self.shape):
            out.append(acc)
            acc *= d
        return tuple(reversed(out))

    def __getitem__(self, idx: Any) -> Load:
        idx = idx if isinstance(idx, tuple) else (idx,)
        return Load(self, tuple(idx))

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{','.join(map(str, self.shape))}] {self.role}"


class Stmt:
    """Base of kernel-IR statements."""

    def __str__(self) -> str:
        from .printer import stmt_text

        return "\n".join(stmt_text(self, 0))


Body = tuple[Stmt, ...]


def _body(stmts: Union[Stmt, Iterable[Stmt]]) -> Body:
    if isinstance(stmts, Stmt):
        return (stmts,)
    out = tuple(stmts)
    for s in out:
        if not isinstance(s, Stmt):
            raise KernelError(f"a loop or if body holds {s!r}, which is not a statement (Loop/Store/Assign/If)")
    return out


@dataclass(frozen=True)
class Store(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(as_expr(i, "i64") for i in self.indices))
        object.__setattr__(self, "value", as_expr(self.value, self.buffer.dtype))


@dataclass(frozen=True)
class Assign(Stmt):
    """``var = value`` for a local scalar (the first assignment declares it)."""

    var: Var
    value: Expr

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", as_expr(self.value, self.var.dtype))


@dataclass(frozen=True)
class Loop(Stmt):
    """``for var in range(start, stop, step)`` with a kind (serial/unroll/vectorize/parallel) and annotations."""

    var: Var
    start: Expr
    stop: Expr
    step: int = 1
    body: Body = ()
    kind: str = "serial"
    annotations: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_expr(self.start, "i64"))
        object.__setattr__(self, "stop", as_expr(self.stop, "i64"))
        object.__setattr__(self, "body", _body(self.body))
        ann = self.annotations
        if isinstance(ann, dict):
            ann = tuple(sorted(ann.items()))
        object.__setattr__(self, "annotations", tuple(ann))
        if self.kind not in LOOP_KINDS:
            raise KernelError(f"loop {self.var.name}: kind {self.kind!r} is not one of {LOOP_KINDS}")
        if int(self.step) <= 0:
            raise KernelError(f"loop {self.var.name}: step must be a positive integer, got {self.step}")
        object.__setattr__(self, "step", int(self.step))

    @property
    def ann(self) -> dict[str, Any]:
        """The annotations as a dict."""
        return dict(self.annotations)

    @property
    def extent(self) -> int | None:
        """The trip count when both bounds are constants, else None."""
        if isinstance(self.start, Const) and isinstance(self.stop, Const):
            return max(0, -(-(int(self.stop.value) - int(self.start.value)) // self.step))
        return None


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: then else: orelse``."""

    cond: Expr
    then: Body = ()
    orelse: Body = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "then", _body(self.then))
        object.__setattr__(self, "orelse", _body(self.orelse))


@dataclass(frozen=True)
class Kernel:
    """A loop nest over named buffers, compiled by the backend to one function ``void name(buffers...)``."""

    name: str
    buffers: tuple[Buffer, ...]
    body: Body = ()
    fastmath: bool = False
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "body", _body(self.body))
        if not self.name.isidentifier():
            raise KernelError(f"kernel name {self.name!r} must be an identifier")
        names = [b.name for b in self.buffers]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise KernelError(f"kernel {self.name}: buffer names {sorted(dup)} appear more than once")

    def buffer(self, name: str) -> Buffer:
        """The buffer called ``name``."""
        for b in self.buffers:
            if b.name == name:
                return b
        raise KernelError(f"kernel {self.name} has no buffer {name!r}; it has {[b.name for b in self.buffers]}")

    def __str__(self) -> str:
        from .printer import kernel_text

        return kernel_text(self)


def loop(var: str | Var, start: Any, stop: Any | None = None, body: Sequence[Stmt] | Stmt = (), step: int = 1,
         kind: str = "serial", **annotations: Any) -> Loop:
    """Build a Loop; ``loop("i", 10, body=...)`` runs i over 0..10."""
    if stop is None:
        start, stop = 0, start
    v = var if isinstance(var, Var) else Var(var, "i64")
    return Loop(v, start, stop, step, _body(body), kind, tuple(sorted(annotations.items())))
