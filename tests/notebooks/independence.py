"""Are a unit's exercises independent? An exercise's test must read no state that another exercise's cells made.

State "made by exercise B" is every name bound by B's solution cell or B's test cell, and, following the notebook
in order, every name bound by a later cell that reads such a name (a lesson cell that calls the student's function
and keeps the result). A test cell of exercise A that reads a name made by B != A depends on B: under nbgrader a
wrong (or crashing) answer to B would cost A's points too, and the fast path, which grades each exercise alone,
would not see it. The check is static (Python's own parser, on the IPython-transformed cell source), so it is
deterministic and needs no kernel.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

_BUILTINS = set(dir(builtins)) | {"get_ipython", "display", "In", "Out", "exit", "quit"}


@dataclass(frozen=True)
class CellNames:
    """The top-level names a cell binds, and the global names it reads before binding them itself."""

    binds: frozenset[str]
    reads: frozenset[str]


def _python(source: str) -> str:
    """A cell's source as plain Python (magics and shell escapes turned into calls, as IPython runs it)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _bound_in(node: ast.AST) -> set[str]:
    """Names a statement binds in the scope it runs in (not inside nested functions or classes)."""
    out: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if not isinstance(n, ast.Lambda):
                out.add(n.name)
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
        elif isinstance(n, ast.NamedExpr):
            out.add(n.target.id)
        elif isinstance(n, (ast.comprehension,)):
            pass  # comprehension targets are local to the comprehension
        stack.extend(ast.iter_child_nodes(n))
    return out


def _free_reads(node: ast.AST) -> set[str]:
    """Global names a statement may read: names loaded anywhere in it, minus names local to the function,
    lambda or comprehension that loads them."""
    reads: set[str] = set()

    def visit(n: ast.AST, local: frozenset[str]) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = n.args
            params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            for d in [*args.defaults, *args.kw_defaults]:
                if d is not None:
                    visit(d, local)
            for deco in getattr(n, "decorator_list", []):
                visit(deco, local)
            body = n.body if isinstance(n.body, list) else [n.body]
            declared_global = {g for b in body for s in ast.walk(b) if isinstance(s, ast.Global) for g in s.names}
            inner = set(params)
            for b in body:
                inner |= _bound_in(b)
            inner -= declared_global
            for b in body:
                visit(b, local | frozenset(inner))
            return
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            targets = {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            for child in ast.iter_child_nodes(n):
                visit(child, local | frozenset(targets))
            return
        if isinstance(n, ast.ClassDef):
            for child in [*n.bases, *n.keywords, *n.decorator_list]:
                visit(child, local)
            for b in n.body:
                visit(b, local)
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
            reads.add(n.id)
        for child in ast.iter_child_nodes(n):
            visit(child, local)

    visit(node, frozenset())
    return reads


class _Flow:
    """Follows a cell's top-level statements in execution order: a name is read from outside the cell when it is
    loaded before the cell binds it. Function bodies run later, when called: their global reads count when the
    cell never binds the name at all."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.reads: set[str] = set()
        self.deferred: set[str] = set()

    def read(self, node: ast.AST | None) -> None:
        if node is None:
            return
        self.reads |= _free_reads(node) - self.bound
        self.bound |= {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}

    def bind(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.bound.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind(elt)
        elif isinstance(target, ast.Starred):
            self.bind(target.value)
        elif isinstance(target, ast.Attribute):
            self.read(target.value)
        elif isinstance(target, ast.Subscript):
            self.read(target.value)
            self.read(target.slice)

    def body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:  # noqa: C901 (one case per statement kind)
        if isinstance(node, ast.Assign):
            self.read(node.value)
            for target in node.targets:
                self.bind(target)
        elif isinstance(node, ast.AnnAssign):
            self.read(node.value)
            self.bind(node.target)
        elif isinstance(node, ast.AugAssign):
            self.read(ast.Name(node.target.id, ast.Load()) if isinstance(node.target, ast.Name) else node.target)
            self.read(node.value)
            self.bind(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.read(node.iter)
            self.bind(node.target)
            self.body(node.body)
            self.body(node.orelse)
        elif isinstance(node, (ast.While, ast.If)):
            self.read(node.test)
            self.body(node.body)
            self.body(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.read(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars)
            self.body(node.body)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.body(node.body)
            for handler in node.handlers:
                self.read(handler.type)
                if handler.name:
                    self.bound.add(handler.name)
                self.body(handler.body)
            self.body(node.orelse)
            self.body(node.finalbody)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.deferred |= _free_reads(node)
            self.bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.bound |= _bound_in(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Pass, ast.Break, ast.Continue)):
            pass
        else:  # expressions, return, assert, raise, del, match: read everything, bind what it binds
            self.read(node)
            self.bound |= _bound_in(node)


def cell_names(source: str) -> CellNames:
    """What a cell binds at top level, and which global names it reads that it has not bound itself before."""
    flow = _Flow()
    flow.body(ast.parse(_python(source)).body)
    reads = flow.reads | (flow.deferred - flow.bound)
    return CellNames(frozenset(flow.bound), frozenset(reads - _BUILTINS))


def exercise_of(cell) -> str | None:
    """The exercise a cell belongs to: its solution cell's grade_id, or its test cell's grade_id minus '_test'."""
    meta = cell.metadata.get("nbgrader", {})
    gid = meta.get("grade_id")
    if meta.get("solution"):
        return gid
    if meta.get("grade") and gid:
        return gid.removesuffix("_test")
    return None


def _label(index: int, cell) -> str:
    gid = cell.metadata.get("nbgrader", {}).get("grade_id")
    return f"cell {index}" + (f" ({gid!r})" if gid else "")


def independence_problems(source_nb) -> list[str]:
    """Every read, in a test cell of exercise A, of a name that a cell of exercise B != A made (see module doc)."""
    made_by: dict[str, tuple[str, str]] = {}   # name -> (exercise, label of the cell that bound it)
    problems: list[str] = []
    for index, cell in enumerate(source_nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        try:
            names = cell_names(cell.source)
        except SyntaxError as err:
            problems.append(f"{_label(index, cell)} does not parse, so its reads cannot be checked: {err}")
            continue
        own = exercise_of(cell)
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            for name in sorted(names.reads):
                if name in made_by and made_by[name][0] != own:
                    other, where = made_by[name]
                    problems.append(
                        f"{_label(index, cell)}, the test of exercise {own!r} reads `{name}`, which exercise "
                        f"{other!r} made in {where}: a wrong answer to {other!r} would cost {own!r} points. Build "
                        f"`{name}` in the test itself, or from the library instead of the student's code")
        # what this cell binds now belongs to its exercise, or to the exercise whose state it read
        sources = {made_by[n] for n in names.reads if n in made_by}
        if own is not None:
            owner = (own, _label(index, cell))
        elif sources:
            owner = sorted(sources)[0]
            owner = (owner[0], f"{owner[1]}, via {_label(index, cell)}")
        else:
            owner = None
        for name in names.binds:
            if owner is None:
                made_by.pop(name, None)  # rebound from clean state
            else:
                made_by[name] = owner
    return problems
