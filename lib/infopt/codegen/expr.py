"""Kernel-IR expressions and buffers: each expression kind is one class that names its children.

Every expression is an immutable dataclass with a ``dtype`` (``f32 f64 i32 i64 bool``). The kinds:
``Const(value, dtype)``, ``Var(name, dtype)`` (a loop variable, always ``i64``, or a local scalar),
``Load(buffer, indices)``, ``Bin(op, a, b)`` with op in ``+ - * / // % max min`` (``//`` and ``%`` are
integer division and remainder with C semantics: truncating; index math keeps them nonnegative),
``Cmp(op, a, b)`` (bool), ``Select(cond, a, b)``, ``Call(fn, args)`` for math functions (``exp log sqrt
abs neg floor round fma tanh``), ``Cast(to, a)`` (value conversion) and ``BitCast(to, a)`` (same bits).
Python operators build them: ``A[i, k] * B[k, j] + 1.0``.

What a kind says about itself, so that no traversal needs to know it (``infopt.codegen.walk`` is the
one generic walk): ``CHILDREN`` names the fields that hold child expressions (``src`` gives them in
order, ``with_src`` rebuilds the node with new ones); ``type_error()`` states its own typing rule;
``text()`` is its text form. A new expression kind is one such class plus the emitters that must know it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Sequence

import numpy as np

FLOAT_DTYPES = ("f32", "f64")
INT_DTYPES = ("i32", "i64")
KERNEL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
BIN_OPS = ("+", "-", "*", "/", "//", "%", "max", "min")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
CALL_FNS = {"exp": 1, "log": 1, "sqrt": 1, "abs": 1, "neg": 1, "floor": 1, "round": 1, "tanh": 1, "fma": 3}
BIT_WIDTHS = {"f32": 32, "i32": 32, "f64": 64, "i64": 64}
PRECEDENCE = {"max": 9, "min": 9, "*": 5, "/": 5, "//": 5, "%": 5, "+": 4, "-": 4}


class KernelError(ValueError):
    """An ill-formed kernel; the message names the statement at fault and what to change."""


def python_dtype(v: Any) -> str:
    """The kernel dtype a Python number becomes: bool, i64 for ints, f32 for floats."""
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
        dt = like or python_dtype(v)
        if dt in INT_DTYPES and isinstance(v, (float, np.floating)) and float(v) != int(v):
            raise KernelError(f"constant {v} is not an integer but is used where {dt} is expected")
        return Const(v, dt)
    raise KernelError(f"cannot use {v!r} ({type(v).__name__}) as a kernel expression; use a number or an Expr")


class Expr:
    """Base of kernel-IR expressions: children (``src``) and rebuild (``with_src``), a typing rule, a text form.

    Python operators build ``Bin`` nodes, coercing numbers to the other side's dtype.
    """

    dtype: str
    CHILDREN: ClassVar[tuple[str, ...]] = ()  # fields holding child expressions (a tuple field holds several)

    @property
    def src(self) -> tuple["Expr", ...]:
        """The child expressions, in field order."""
        out: list[Expr] = []
        for name in self.CHILDREN:
            v = getattr(self, name)
            out.extend(v) if isinstance(v, tuple) else out.append(v)
        return tuple(out)

    def with_src(self, src: Sequence["Expr"]) -> "Expr":
        """This node with its children replaced by ``src`` (same count and order as ``self.src``)."""
        old = self.src
        if len(src) != len(old):
            raise KernelError(f"{type(self).__name__} has {len(old)} children, got {len(src)} to rebuild it")
        if all(a is b for a, b in zip(src, old)):
            return self
        it = iter(src)
        changes = {}
        for name in self.CHILDREN:
            v = getattr(self, name)
            changes[name] = tuple(next(it) for _ in v) if isinstance(v, tuple) else next(it)
        return replace(self, **changes)

    def type_error(self) -> str | None:
        """What is wrong with this node's own operands (dtypes, arity), or None; children are checked separately."""
        return None

    def text(self, parent: int = 0) -> str:
        """The text form; ``parent`` is the precedence of the enclosing operator (for parentheses)."""
        return f"{type(self).__name__.lower()}({', '.join(c.text() for c in self.src)})"

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        args = ", ".join(repr(getattr(self, f.name)) for f in fields(self)) if hasattr(self, "__dataclass_fields__") else ""
        return f"{type(self).__name__}({args})"

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

    def text(self, parent: int = 0) -> str:
        if self.dtype == "bool":
            return "true" if self.value else "false"
        if self.dtype in FLOAT_DTYPES:
            return repr(float(self.value)) + ("" if self.dtype == "f32" else "d")
        return str(self.value)

    def __repr__(self) -> str:
        return f"Const({self.value!r}, {self.dtype!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Var(Expr):
    """A loop variable (i64) or a local scalar, by name."""

    name: str
    dtype: str = "i64"

    def text(self, parent: int = 0) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.dtype!r})"


def index_text(indices: Sequence[Expr]) -> str:
    """``[i, j + 1]``: an index tuple as text, for messages and the text form."""
    return "[" + ", ".join(i.text() for i in indices) + "]"


@dataclass(frozen=True, eq=True, repr=False)
class Load(Expr):
    """``buffer[indices]``: one element read."""

    buffer: "Buffer"
    indices: tuple[Expr, ...]
    CHILDREN = ("indices",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(as_expr(i, "i64") for i in self.indices))

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.buffer.dtype

    def text(self, parent: int = 0) -> str:
        return f"{self.buffer.name}{index_text(self.indices)}"

    def __repr__(self) -> str:
        return f"Load({self.buffer.name}, {list(self.indices)})"


@dataclass(frozen=True, eq=True, repr=False)
class Bin(Expr):
    """``a op b`` for op in + - * / // % max min; both sides have the same dtype."""

    op: str
    a: Expr
    b: Expr
    CHILDREN = ("a", "b")

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.a.dtype

    def type_error(self) -> str | None:
        if self.op not in BIN_OPS:
            return f"unknown binary op {self.op!r}; use one of {BIN_OPS}"
        if self.a.dtype != self.b.dtype:
            return f"`{self.text()}` mixes {self.a.dtype} and {self.b.dtype}; add a Cast"
        if self.op in ("//", "%") and self.dtype not in INT_DTYPES:
            return f"`{self.text()}`: {self.op} is for integers; use / or floor() for floats"
        if self.dtype == "bool":
            return f"`{self.text()}`: arithmetic on bool; use select()"
        return None

    def text(self, parent: int = 0) -> str:
        if self.op in ("max", "min"):
            return f"{self.op}({self.a.text()}, {self.b.text()})"
        p = PRECEDENCE.get(self.op, 0)
        s = f"{self.a.text(p)} {self.op} {self.b.text(p + 1)}"
        return f"({s})" if p < parent else s

    def __repr__(self) -> str:
        return f"Bin({self.op!r}, {self.a!r}, {self.b!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Cmp(Expr):
    """``a op b`` for op in < <= > >= == !=; a bool."""

    op: str
    a: Expr
    b: Expr
    CHILDREN = ("a", "b")

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return "bool"

    def type_error(self) -> str | None:
        if self.op not in CMP_OPS:
            return f"unknown comparison {self.op!r}; use one of {CMP_OPS}"
        if self.a.dtype != self.b.dtype:
            return f"`{self.text()}` compares {self.a.dtype} with {self.b.dtype}; add a Cast"
        return None

    def text(self, parent: int = 0) -> str:
        s = f"{self.a.text(3)} {self.op} {self.b.text(3)}"
        return f"({s})" if parent > 2 else s


@dataclass(frozen=True, eq=True, repr=False)
class Select(Expr):
    """``cond ? a : b`` without branches (vectorizes)."""

    cond: Expr
    a: Expr
    b: Expr
    CHILDREN = ("cond", "a", "b")

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.a.dtype

    def type_error(self) -> str | None:
        if self.cond.dtype != "bool" or self.a.dtype != self.b.dtype:
            return f"`{self.text()}` needs a bool condition and two sides of one dtype"
        return None


@dataclass(frozen=True, eq=True, repr=False)
class Call(Expr):
    """A math function (exp log sqrt abs neg floor round tanh fma) applied to float arguments."""

    fn: str
    args: tuple[Expr, ...]
    CHILDREN = ("args",)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.args[0].dtype if self.args else "f32"

    def type_error(self) -> str | None:
        if self.fn not in CALL_FNS:
            return f"unknown function {self.fn!r}; use one of {sorted(CALL_FNS)}"
        if len(self.args) != CALL_FNS[self.fn]:
            return f"{self.fn} takes {CALL_FNS[self.fn]} arguments, got {len(self.args)}"
        if any(a.dtype != self.args[0].dtype for a in self.args):
            return f"`{self.text()}`: arguments have different dtypes"
        if self.fn not in ("abs", "neg") and self.dtype not in FLOAT_DTYPES:
            return f"`{self.text()}`: {self.fn} takes floats, got {self.dtype}"
        return None

    def text(self, parent: int = 0) -> str:
        return f"{self.fn}({', '.join(a.text() for a in self.args)})"


@dataclass(frozen=True, eq=True, repr=False)
class Cast(Expr):
    """Value conversion to ``dtype`` (float<->int truncates toward zero, like C)."""

    to: str
    a: Expr
    CHILDREN = ("a",)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.to

    def text(self, parent: int = 0) -> str:
        return f"{self.to}({self.a.text()})"


@dataclass(frozen=True, eq=True, repr=False)
class BitCast(Expr):
    """Reinterpret the bits of ``a`` as ``dtype`` (same width: f32<->i32, f64<->i64)."""

    to: str
    a: Expr
    CHILDREN = ("a",)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.to

    def type_error(self) -> str | None:
        if BIT_WIDTHS.get(self.to) != BIT_WIDTHS.get(self.a.dtype):
            return f"`{self.text()}`: bitcast needs equal widths ({self.a.dtype} -> {self.to})"
        return None

    def text(self, parent: int = 0) -> str:
        return f"bitcast<{self.to}>({self.a.text()})"


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


# ----- buffers ------------------------------------------------------------------------------------
BUFFER_ROLES = ("in", "out", "inout", "temp")


@dataclass(frozen=True)
class Buffer:
    """A named C-contiguous array argument of a kernel: shape, dtype and role (in/out/inout/temp).

    ``role`` is ``"in"``, ``"out"``, ``"inout"`` or ``"temp"`` (scratch the caller allocates, e.g. a
    packed panel). ``buf[i, j]`` builds a ``Load``.
    """

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
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
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
