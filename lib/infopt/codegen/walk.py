"""The one generic walk over the kernel IR: iterate, map, substitute, find loops, collect accesses and variables.

It uses only what every node says about itself: an expression's children (``src``) and rebuild
(``with_src``); a statement's expressions (``exprs``), nested bodies (``bodies``), the variable it binds
for them (``bound_var``) and its ``rebuild``. So a new expression kind needs no change here, in the
verifier or in the schedule primitives; only the emitters that must know it dispatch on its class.
Maps rebuild bottom-up (children first, then the node), like tinygrad's ``graph_rewrite``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator, Mapping, Sequence

from .expr import Buffer, Expr, KernelError, Load, Var
from .kernel_ir import Assign, Body, Kernel, Loop, Stmt, Store

Path = tuple[int, ...]  # child positions from the kernel body down to a statement (bodies counted in order)


# ----- expressions --------------------------------------------------------------------------------
def iter_exprs(e: Expr) -> Iterator[Expr]:
    """Every sub-expression of ``e``, parents before children."""
    yield e
    for c in e.src:
        yield from iter_exprs(c)


def iter_postorder(e: Expr) -> Iterator[Expr]:
    """Every sub-expression of ``e``, children before parents (the order values are computed in)."""
    for c in e.src:
        yield from iter_postorder(c)
    yield e


def map_expr(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Rebuild ``e`` bottom-up, replacing every node by ``fn(node with its children already mapped)``."""
    return fn(e.with_src(tuple(map_expr(c, fn) for c in e.src)))


def substitute(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """``e`` with every ``Var`` named in ``mapping`` replaced by its expression."""
    if not mapping:
        return e
    return map_expr(e, lambda x: mapping.get(x.name, x) if isinstance(x, Var) else x)


def free_vars(e: Expr) -> set[str]:
    """Names of the variables an expression mentions."""
    return {x.name for x in iter_exprs(e) if isinstance(x, Var)}


def loads_in(e: Expr) -> Iterator[Load]:
    """The loads inside ``e``, parents before children."""
    return (x for x in iter_exprs(e) if isinstance(x, Load))


# ----- statements ---------------------------------------------------------------------------------
def iter_stmts(body: Body) -> Iterator[Stmt]:
    """Every statement, pre-order (a loop before its body)."""
    for s in body:
        yield s
        for b in s.bodies:
            yield from iter_stmts(b)


def iter_scoped(body: Body) -> Iterator[tuple[Stmt, Path, tuple[tuple[Stmt, int], ...]]]:
    """Every statement in program order with its path and its ancestors ``(statement, which body)``, outermost first.

    A path counts a statement's children through all its bodies in order (an if's else-branch continues
    the numbering of its then-branch), so it names one statement of the kernel.
    """
    return _scoped(body, (), (), 0)


def _scoped(body: Body, path: Path, ancestors: tuple[tuple[Stmt, int], ...], first: int):
    for n, s in enumerate(body):
        p = path + (first + n,)
        yield s, p, ancestors
        offset = 0
        for bi, b in enumerate(s.bodies):
            yield from _scoped(b, p, ancestors + ((s, bi),), offset)
            offset += len(b)


def map_body(body: Body, stmt_fn: Callable[[Stmt], Stmt | Body] | None = None,
             expr_fn: Callable[[Expr], Expr] | None = None) -> Body:
    """Rebuild ``body`` bottom-up: ``expr_fn`` maps every expression node, then ``stmt_fn`` every statement
    (its bodies already rebuilt); ``stmt_fn`` may return a tuple of statements, spliced in place."""
    out: list[Stmt] = []
    for s in body:
        exprs = tuple(map_expr(x, expr_fn) for x in s.exprs) if expr_fn is not None else None
        bodies = tuple(_same_or(b, map_body(b, stmt_fn, expr_fn)) for b in s.bodies)
        new = s.rebuild(exprs, bodies)
        if stmt_fn is not None:
            new = stmt_fn(new)
        out.extend(new if isinstance(new, tuple) else (new,))
    return tuple(out)


def _same_or(old: Body, new: Body) -> Body:
    """``old`` itself when ``new`` holds the very same statements (so unchanged nodes stay the same objects)."""
    return old if len(old) == len(new) and all(a is b for a, b in zip(old, new)) else new


def map_stmt(s: Stmt, expr_fn: Callable[[Expr], Expr]) -> Stmt:
    """One statement with ``expr_fn`` applied bottom-up to every expression node in it (bounds, indices, bodies)."""
    (new,) = map_body((s,), None, expr_fn)
    return new


def substitute_stmt(s: Stmt, mapping: Mapping[str, Expr]) -> Stmt:
    """A statement with variables substituted everywhere inside it; a loop's own variable shadows the mapping."""
    exprs = tuple(substitute(x, mapping) for x in s.exprs)
    bound = s.bound_var
    inner = {k: v for k, v in mapping.items() if bound is None or k != bound.name}
    return s.rebuild(exprs, tuple(tuple(substitute_stmt(b, inner) for b in body) for body in s.bodies))


def map_loops(body: Body, fn: Callable[[Loop], Stmt | Body]) -> Body:
    """Rebuild ``body`` bottom-up, replacing every Loop by ``fn(loop)`` (a statement or a tuple of statements)."""
    return map_body(body, lambda s: fn(s) if isinstance(s, Loop) else s)


def loops_in(body: Body) -> list[Loop]:
    """Every loop in ``body``, pre-order."""
    return [s for s in iter_stmts(body) if isinstance(s, Loop)]


def find_loop(kernel: Kernel, var: str) -> Loop:
    """The loop over ``var``, or a KernelError listing the loop variables there are."""
    loops = loops_in(kernel.body)
    for s in loops:
        if s.var.name == var:
            return s
    raise KernelError(f"kernel {kernel.name} has no loop over {var!r}; loops: {[s.var.name for s in loops]}")


def loop_path(body: Body, var: str) -> list[Loop]:
    """The loops enclosing the loop over ``var`` (outermost first), ending with it; [] when absent."""
    for s, _, ancestors in iter_scoped(body):
        if isinstance(s, Loop) and s.var.name == var:
            return [a for a, _ in ancestors if isinstance(a, Loop)] + [s]
    return []


def replace_loop(kernel: Kernel, var: str, fn: Callable[[Loop], Stmt | Body]) -> Kernel:
    """The kernel with the loop over ``var`` replaced by ``fn(loop)`` (a KernelError when there is none)."""
    find_loop(kernel, var)
    return replace(kernel, body=map_loops(kernel.body, lambda lp: fn(lp) if lp.var.name == var else lp))


def assigned_scalars(body: Body) -> list[Var]:
    """The local scalars a body assigns, in first-assignment order."""
    seen: dict[str, Var] = {}
    for s in iter_stmts(body):
        if isinstance(s, Assign) and s.var.name not in seen:
            seen[s.var.name] = s.var
    return list(seen.values())


def used_names(kernel: Kernel) -> set[str]:
    """Loop variables and buffer names of a kernel (what a new loop or buffer must not be called)."""
    return {lp.var.name for lp in loops_in(kernel.body)} | {b.name for b in kernel.buffers}


def accesses(body: Body) -> Iterator[tuple[Stmt, Buffer, tuple[Expr, ...], bool]]:
    """Every buffer access in program order: (statement, buffer, indices, is_write); a statement's loads come
    before its own store."""
    for s in iter_stmts(body):
        for x in s.exprs:
            for ld in loads_in(x):
                yield s, ld.buffer, ld.indices, False
        if isinstance(s, Store):
            yield s, s.buffer, s.indices, True


def stmt_at(body: Body, path: Sequence[int]) -> Stmt:
    """The statement at ``path`` (as ``iter_scoped`` numbers them)."""
    s: Stmt | None = None
    stmts = body
    for n in path:
        s = stmts[n]
        stmts = tuple(x for b in s.bodies for x in b)
    if s is None:
        raise KernelError("stmt_at needs a non-empty path")
    return s
