"""Argument sensitivity: a family of wrong answers nobody has to think of.

For every parameter of an exercise's function (every method parameter of an exercise's class but `self`/`cls`),
the harness builds a variant of the instructor's solution that ignores that argument: it is frozen to its default
where it has one, else to the value of the first call the notebook makes (a deep copy on every call, as a
hard-coded value would be). Where the first call passes a dataclass (a config), each of its fields is frozen alone
the same way. The hidden tests must reject every such variant, unless the unit's rule table says why that argument
cannot matter:

    [[insensitive]]
    exercise = "predict"
    argument = "vector_bits"          # a parameter, or "parameter.field"
    why = "..."

A Triton kernel's pointer arguments (`*_ptr`) are not frozen: a student cannot hard-code an address. Nor is an
argument whose first value deepcopy refuses (a live rewriter, a builder): the variant fails with NOT_APPLICABLE in
its message, which the harness reads as "nothing to check".
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
from dataclasses import dataclass

from autograder.nbgrader_course import solution_body

PREFIX = "freeze:"
NOT_APPLICABLE = "argument-freeze-not-applicable"   # in a variant's failure: the argument could not be copied

# Defined before the frozen solution cell: the first value seen per key, handed back as a fresh deep copy each call
# (an object deepcopy refuses is handed back as it is).
FREEZER = '''
import copy as _freezer_copy
import dataclasses as _freezer_dataclasses
_FREEZER_FIRST = {}


def _freezer_copy_of(value):
    """A deep copy; a scalar Triton hands a kernel in its interpreter (a tl.tensor over a numpy TensorHandle) is
    copied through its handle (deepcopy recurses forever on it)."""
    handle = getattr(value, "handle", None) if type(value).__module__.startswith("triton.") else None
    if handle is not None and hasattr(handle, "data") and hasattr(handle.data, "copy"):
        return type(value)(type(handle)(handle.data.copy(), handle.dtype), value.type)
    return _freezer_copy.deepcopy(value)


def _freezer_copied(value):
    try:
        return _freezer_copy_of(value)
    except Exception:
        return value


NOT_APPLICABLE = "argument-freeze-not-applicable"


class FreezeNotApplicable(Exception):
    """This argument's value cannot be copied, so no student could have hard-coded it."""


def _frozen_argument(key, value):
    """The value this argument had on the first call (a Triton constexpr stays a constexpr, as a literal would)."""
    if type(value).__name__ == "constexpr":
        first = _FREEZER_FIRST.setdefault(key, value.value)
        return type(value)(first)
    if key not in _FREEZER_FIRST:
        try:
            _FREEZER_FIRST[key] = _freezer_copy_of(value)
        except Exception:
            raise FreezeNotApplicable(f"{NOT_APPLICABLE}: {key}") from None
    return _freezer_copied(_FREEZER_FIRST[key])


def _frozen_field(key, value, name):
    """A copy of `value` whose field `name` is what the first call's value had (value itself when it is not a
    dataclass). Set on the copy directly, so a config's own validation does not run: the solution sees the field
    as a student's code that ignores it would."""
    if not _freezer_dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    if key not in _FREEZER_FIRST:
        _FREEZER_FIRST[key] = _freezer_copied(getattr(value, name))
    clone = _freezer_copy.copy(value)
    object.__setattr__(clone, name, _freezer_copied(_FREEZER_FIRST[key]))
    return clone
'''


@dataclass(frozen=True)
class Frozen:
    """One generated wrong answer: `argument` ("param" or "param.field") of `exercise` frozen."""

    exercise: str
    argument: str
    code: str

    @property
    def id(self) -> str:
        return f"{PREFIX}{self.exercise}:{self.argument}"


def _is_triton_kernel(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _targets(tree: ast.Module) -> list[ast.FunctionDef]:
    """The functions whose parameters are frozen: top-level defs, and the methods of top-level classes."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.append(node)
        elif isinstance(node, ast.ClassDef):
            out += [n for n in node.body if isinstance(n, ast.FunctionDef)]
    return out


def _parameters(fn: ast.FunctionDef) -> list[tuple[str, ast.expr | None, ast.expr | None]]:
    """(name, default, annotation) of every parameter a caller passes."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [(a.arg, d, a.annotation) for a, d in zip(positional, defaults)]
    out += [(a.arg, d, a.annotation) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return [p for p in out if p[0] not in ("self", "cls")]


def _body_start(fn: ast.FunctionDef) -> int:
    first = fn.body[0]
    is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                  str)
    return 1 if is_doc else 0


class _ReadsThrough(ast.NodeTransformer):
    """Every read of `name` becomes `_frozen_argument(key, name)`. For a Triton kernel: its interpreter turns a
    value assigned in the kernel into a tensor, so `BLOCK = ...` would stop being a constexpr."""

    def __init__(self, name: str, key: str) -> None:
        self.name, self.key = name, key

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != self.name or not isinstance(node.ctx, ast.Load):
            return node
        call = ast.Call(ast.Name("_frozen_argument", ast.Load()), [ast.Constant(self.key), node], [])
        return ast.copy_location(call, node)


def _freeze(source: str, fn_index: int, statement: str | None, reads: tuple[str, str] | None = None) -> str:
    """`source` with `statement` first in the body of the fn_index-th target function (or, with `reads` = (name,
    key), every read of that parameter in its body going through _frozen_argument)."""
    tree = ast.parse(source)
    fn = _targets(tree)[fn_index]
    if reads is not None:
        fn.body = [_ReadsThrough(*reads).visit(stmt) for stmt in fn.body]
        ast.fix_missing_locations(fn)
    else:
        fn.body.insert(_body_start(fn), ast.parse(statement).body[0])
    return FREEZER + "\n\n" + ast.unparse(tree) + "\n"


def dataclass_fields(annotation: ast.expr | None, names: dict[str, str]) -> list[str]:
    """The fields of the dataclass an annotation names, when the notebook imports it from infopt (else [])."""
    if annotation is None:
        return []
    text = ast.unparse(annotation).split("|")[0].strip().strip("'\"")
    module = names.get(text)
    if module is None:
        return []
    try:
        cls = getattr(importlib.import_module(module), text)
    except Exception:
        return []
    if not dataclasses.is_dataclass(cls) or any(k.__module__.split(".")[0] == "xdsl" for k in cls.__mro__):
        return []                       # an IR object (xDSL's operations are dataclasses) is not a config
    return [f.name for f in dataclasses.fields(cls) if f.init and f.repr]


def imported_names(source_nb) -> dict[str, str]:
    """{name: module} for every `from infopt... import name` in the notebook's code cells."""
    out = {}
    for cell in source_nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(solution_body(cell.source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("infopt"):
                out.update({a.asname or a.name: node.module for a in node.names})
    return out


def frozen_variants(source_nb) -> list[Frozen]:
    """Every argument-freezing variant of every exercise of a source notebook."""
    names = imported_names(source_nb)
    out = []
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        exercise, source = meta["grade_id"], solution_body(cell.source)
        targets = _targets(ast.parse(source))
        for i, fn in enumerate(targets):
            triton = _is_triton_kernel(fn)
            prefix = f"{fn.name}." if len(targets) > 1 else ""
            for name, default, annotation in _parameters(fn):
                if triton and name.endswith("_ptr"):
                    continue
                key = f"{exercise}:{prefix}{name}"
                if triton:
                    code = _freeze(source, i, None, reads=(name, key))
                else:
                    code = _freeze(source, i, f"{name} = {ast.unparse(default)}" if default is not None
                                   else f"{name} = _frozen_argument({key!r}, {name})")
                out.append(Frozen(exercise, prefix + name, code))
                for fld in dataclass_fields(annotation, names):
                    stmt = f"{name} = _frozen_field({key + '.' + fld!r}, {name}, {fld!r})"
                    out.append(Frozen(exercise, f"{prefix}{name}.{fld}", _freeze(source, i, stmt)))
    return out
