"""Near-copies of the library's code in a student's cells, found by comparing normalized syntax trees.

A student can paste `inspect.getsource` of the library's reference (renamed, rewrapped, docstring dropped) and pass
the tests with the library's code. Every function a student cell defines is compared with every function and
method of `infopt` (any unit's: the same answer may sit in another unit's library). Names, docstrings, string
constants and formatting are ignored: a function becomes the sequence of its syntax-tree node types in source order,
with attribute names kept (they name the APIs it calls). The similarity is the Jaccard index of the two sequences'
5-node shingles. A near-copy is reported with the library function it matches and the similarity, for the
instructor to judge; a score never changes because of it. Uses only the standard library.
"""
from __future__ import annotations

import ast
import dataclasses
from functools import lru_cache
from pathlib import Path

SHINGLE = 5          # nodes per shingle
MIN_NODES = 60       # smaller functions (a few lines) are too generic to call a copy
THRESHOLD = 0.8      # Jaccard similarity from which a function is reported as a near-copy


@dataclasses.dataclass(frozen=True)
class NearCopy:
    """A student function that is a near-copy of a library function: where each is, and how similar (0-1)."""

    cell: str
    function: str
    library: str
    similarity: float

    def __str__(self) -> str:
        return (f"{self.cell}: `{self.function}` is a near-copy of the library's `{self.library}` (similarity "
                f"{self.similarity:.2f} of normalized syntax; names, docstrings and formatting ignored): check that "
                "it is the student's own work")


def _tokens(node: ast.AST) -> list[str]:
    """The node types of `node`'s tree in source order, attribute names kept, names and docstrings dropped."""
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = item.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]  # the docstring
            children = [*getattr(item, "decorator_list", []), *([item.args] if hasattr(item, "args") else []),
                        *body]
        else:
            children = list(ast.iter_child_nodes(item))
        if isinstance(item, ast.Attribute):
            out.append("." + item.attr)
        elif isinstance(item, ast.Constant):
            out.append("const:" + type(item.value).__name__)
        elif not isinstance(item, (ast.Load, ast.Store, ast.Del, ast.expr_context)):
            out.append(type(item).__name__)
        stack.extend(reversed(children))
    return out


def _shingles(tokens: list[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(tokens[i:i + SHINGLE]) for i in range(max(len(tokens) - SHINGLE + 1, 1)))


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every function and method in `tree`, nested ones included."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((prefix + node.name, node))
            found += _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, prefix + node.name + ".")
        else:
            found += _functions(node, prefix)
    return found


@lru_cache(maxsize=4)
def library_index(root: str | None = None) -> tuple[tuple[str, int, frozenset], ...]:
    """(module:qualname, node count, shingles) of every function in the package under `root` (default: infopt)."""
    base = Path(root) if root else Path(__file__).resolve().parents[1]
    index = []
    for path in sorted(base.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        module = ".".join((base.name, *path.relative_to(base).with_suffix("").parts)).removesuffix(".__init__")
        for name, node in _functions(tree):
            tokens = _tokens(node)
            if len(tokens) >= MIN_NODES:
                index.append((f"{module}:{name}", len(tokens), _shingles(tokens)))
    return tuple(index)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity (0-1) of two pieces of Python source, normalized as described above."""
    sa, sb = _shingles(_tokens(ast.parse(a))), _shingles(_tokens(ast.parse(b)))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def near_copies(cells: list[tuple[str, str]], index: tuple | None = None,
                threshold: float = THRESHOLD) -> list[NearCopy]:
    """The functions in (label, source) cells that are near-copies of a library function (best match each)."""
    index = library_index() if index is None else index
    found = []
    for label, source in cells:
        try:
            tree = ast.parse("\n".join("pass" if line.lstrip().startswith(("%", "!")) else line
                                       for line in source.splitlines()))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # the cell fails when it runs; the tamper scan reports what it can
        for name, node in _functions(tree):
            tokens = _tokens(node)
            if len(tokens) < MIN_NODES:
                continue
            mine = _shingles(tokens)
            best, where = 0.0, ""
            for library, size, theirs in index:
                if size * 2 < len(tokens) or len(tokens) * 2 < size:
                    continue  # Jaccard cannot reach 0.5 between sizes this far apart
                score = len(mine & theirs) / len(mine | theirs)
                if score > best:
                    best, where = score, library
            if best >= threshold:
                found.append(NearCopy(label, name, where, round(best, 3)))
    return found
