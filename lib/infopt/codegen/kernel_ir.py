"""The loop-nest kernel IR: statements (loops, stores, scalar assignments, ifs) and the Kernel that holds them.

Data model (every node is an immutable dataclass; rewrite with ``infopt.codegen.walk``, the one generic
walk over expressions and statements; expressions and buffers are in ``infopt.codegen.expr``):

- ``Loop(var, start, stop, step, body, kind, annotations)`` iterates ``var = start, start+step, ... < stop``;
  ``kind`` is ``"serial"``, ``"unroll"`` (the backend emits the body once per iteration; bounds must be
  constant), ``"vectorize"`` (LLVM loop metadata asks for vectorization, ``annotations["width"]`` for a
  width) or ``"parallel"`` (when it is the kernel's only top-level statement, with constant bounds, the
  runtime splits its range across threads; a parallel loop anywhere else runs serially). ``start``/``stop``
  may be expressions of outer loop variables (and ``min`` for tails).
- ``Store(buffer, indices, value)``; ``Assign(var, value)`` sets a local scalar (first assignment declares
  it; reductions accumulate into one); ``If(cond, then, orelse)``.
- ``Kernel(name, buffers, body, fastmath)``: the unit the backend compiles to one LLVM function.
  ``fastmath=True`` lets LLVM reassociate float math (``reassoc contract nsz arcp`` flags), which it needs
  to vectorize float reductions (a sum or max over a row); results then differ in rounding.

Each statement kind names its expression fields (``EXPRS``) and nested bodies (``BODIES``); ``exprs``,
``bodies`` and ``rebuild`` are what the walk uses. ``print(kernel)`` shows the text form;
``infopt.codegen.verify_kernel`` checks well-formedness and proves every access in bounds.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Iterable, Sequence, Union

from .expr import Buffer, Const, Expr, KernelError, Var, as_expr, index_text

LOOP_KINDS = ("serial", "unroll", "vectorize", "parallel")


class Stmt:
    """Base of kernel-IR statements: their expressions (``exprs``), nested bodies (``bodies``) and a rebuild."""

    EXPRS: ClassVar[tuple[str, ...]] = ()   # fields holding expressions (a tuple field holds several)
    BODIES: ClassVar[tuple[str, ...]] = ()  # fields holding nested statement tuples

    @property
    def exprs(self) -> tuple[Expr, ...]:
        """The statement's own expressions (indices, values, bounds, conditions), in field order."""
        out: list[Expr] = []
        for name in self.EXPRS:
            v = getattr(self, name)
            out.extend(v) if isinstance(v, tuple) else out.append(v)
        return tuple(out)

    @property
    def bodies(self) -> tuple["Body", ...]:
        """The nested statement lists (a loop's body; an if's then and else)."""
        return tuple(getattr(self, name) for name in self.BODIES)

    @property
    def bound_var(self) -> Var | None:
        """The variable this statement defines for its bodies (a loop's variable), if any."""
        return None

    def rebuild(self, exprs: Sequence[Expr] | None = None, bodies: Sequence["Body"] | None = None) -> "Stmt":
        """This statement with its expressions and/or bodies replaced (same counts and order)."""
        changes: dict[str, Any] = {}
        if exprs is not None:
            old = self.exprs
            if len(exprs) != len(old):
                raise KernelError(f"{type(self).__name__} has {len(old)} expressions, got {len(exprs)} to rebuild it")
            if any(a is not b for a, b in zip(exprs, old)):
                it = iter(exprs)
                for name in self.EXPRS:
                    v = getattr(self, name)
                    changes[name] = tuple(next(it) for _ in v) if isinstance(v, tuple) else next(it)
        if bodies is not None:
            if len(bodies) != len(self.BODIES):
                raise KernelError(f"{type(self).__name__} has {len(self.BODIES)} bodies, got {len(bodies)}")
            for name, new in zip(self.BODIES, bodies):
                if new is not getattr(self, name):
                    changes[name] = tuple(new)
        return replace(self, **changes) if changes else self

    def lines(self, depth: int = 0) -> list[str]:
        """The text form as indented lines."""
        return ["  " * depth + repr(self)]

    @property
    def head(self) -> str:
        """The first line of the text form, for messages."""
        return self.lines(0)[0].strip()

    def __str__(self) -> str:
        return "\n".join(self.lines(0))


Body = tuple[Stmt, ...]


def as_body(stmts: Union[Stmt, Iterable[Stmt]]) -> Body:
    """A statement or an iterable of statements as a body tuple (a KernelError for anything else)."""
    if isinstance(stmts, Stmt):
        return (stmts,)
    out = tuple(stmts)
    for s in out:
        if not isinstance(s, Stmt):
            raise KernelError(f"a loop or if body holds {s!r}, which is not a statement (Loop/Store/Assign/If)")
    return out


def _body_lines(body: Body, depth: int) -> list[str]:
    return [ln for s in body for ln in s.lines(depth)]


@dataclass(frozen=True)
class Store(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
    EXPRS = ("indices", "value")

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", tuple(as_expr(i, "i64") for i in self.indices))
        object.__setattr__(self, "value", as_expr(self.value, self.buffer.dtype))

    def lines(self, depth: int = 0) -> list[str]:
        return [f"{'  ' * depth}{self.buffer.name}{index_text(self.indices)} = {self.value.text()}"]


@dataclass(frozen=True)
class Assign(Stmt):
    """``var = value`` for a local scalar (the first assignment declares it)."""

    var: Var
    value: Expr
    EXPRS = ("value",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", as_expr(self.value, self.var.dtype))

    def lines(self, depth: int = 0) -> list[str]:
        return [f"{'  ' * depth}{self.var.name}: {self.var.dtype} = {self.value.text()}"]


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
    EXPRS = ("start", "stop")
    BODIES = ("body",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_expr(self.start, "i64"))
        object.__setattr__(self, "stop", as_expr(self.stop, "i64"))
        object.__setattr__(self, "body", as_body(self.body))
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
    def bound_var(self) -> Var:
        return self.var

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

    def lines(self, depth: int = 0) -> list[str]:
        pad = "  " * depth
        step = f" step {self.step}" if self.step != 1 else ""
        kind = f" {self.kind}" if self.kind != "serial" else ""
        ann = "".join(f" {k}={v}" for k, v in self.annotations)
        head = f"{pad}for {self.var.name} in {self.start.text()}..{self.stop.text()}{step}{kind}{ann} {{"
        return [head] + _body_lines(self.body, depth + 1) + [pad + "}"]


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: then else: orelse``."""

    cond: Expr
    then: Body = ()
    orelse: Body = ()
    EXPRS = ("cond",)
    BODIES = ("then", "orelse")

    def __post_init__(self) -> None:
        object.__setattr__(self, "then", as_body(self.then))
        object.__setattr__(self, "orelse", as_body(self.orelse))

    def lines(self, depth: int = 0) -> list[str]:
        pad = "  " * depth
        out = [f"{pad}if {self.cond.text()} {{"] + _body_lines(self.then, depth + 1)
        if self.orelse:
            out += [pad + "} else {"] + _body_lines(self.orelse, depth + 1)
        return out + [pad + "}"]


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
        object.__setattr__(self, "body", as_body(self.body))
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

    def text(self) -> str:
        """The whole kernel as text: signature, then the loop nest."""
        args = ", ".join(str(b) for b in self.buffers)
        fm = " fastmath" if self.fastmath else ""
        return "\n".join([f"kernel {self.name}({args}){fm} {{"] + _body_lines(self.body, 1) + ["}"])

    def __str__(self) -> str:
        return self.text()


def loop(var: str | Var, start: Any, stop: Any | None = None, body: Sequence[Stmt] | Stmt = (), step: int = 1,
         kind: str = "serial", **annotations: Any) -> Loop:
    """Build a Loop; ``loop("i", 10, body=...)`` runs i over 0..10."""
    if stop is None:
        start, stop = 0, start
    v = var if isinstance(var, Var) else Var(var, "i64")
    return Loop(v, start, stop, step, as_body(body), kind, tuple(sorted(annotations.items())))
