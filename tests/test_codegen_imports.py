"""Import structure of the compiler packages: no cycles inside a package (function-level imports count), no private
name imported across modules, and the layers only look up (``schedule`` imports ``codegen``, never the reverse)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import infopt

ROOT = Path(infopt.__file__).parent
PACKAGES = ("codegen", "schedule", "accel", "runtime")
# what each package must never import (its own layer and the ones above it are allowed)
FORBIDDEN = {
    "codegen": ("schedule", "accel", "runtime", "widgets"),
    "schedule": ("accel", "runtime", "widgets"),
    "accel": ("schedule", "runtime", "widgets"),
    "runtime": ("widgets",),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every import in the file, at any depth."""
    mod = _module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                out.append((base, a.name, node.lineno))
    return out


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _resolve(target: str, name: str, known: set[str]) -> str | None:
    """The module an import pulls in: ``from pkg import sub`` names the submodule when there is one."""
    if name and f"{target}.{name}" in known:
        return f"{target}.{name}"
    return target if target in known else None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_the_package(package):
    files = _files(package)
    known = {_module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in known}
    for f in files:
        src = _module_name(f)
        for target, name, _ in _imports(f):
            dst = _resolve(target, name, known)
            if dst is not None and dst != src and not dst.endswith(f"infopt.{package}"):
                graph[src].add(dst)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                pytest.fail(f"import cycle in infopt.{package}: {' -> '.join(cycle)}")
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_is_imported_across_modules(package):
    bad = []
    for f in _files(package):
        for target, name, line in _imports(f):
            if target.startswith("infopt") and name.startswith("_") and not name.startswith("__"):
                bad.append(f"{f.relative_to(ROOT.parent)}:{line} imports {name} from {target}")
    assert not bad, "private names imported across modules (make them public where they belong):\n" + "\n".join(bad)


@pytest.mark.parametrize("package", PACKAGES)
def test_layers_only_import_below_them(package):
    bad = []
    for f in _files(package):
        for target, _, line in _imports(f):
            for other in FORBIDDEN[package]:
                if target == f"infopt.{other}" or target.startswith(f"infopt.{other}."):
                    bad.append(f"{f.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not bad, f"infopt.{package} must not import {FORBIDDEN[package]}:\n" + "\n".join(bad)


def test_the_checker_sees_relative_and_function_level_imports(tmp_path):
    f = ROOT / "codegen" / "kernel_ir.py"
    got = {(t, n) for t, n, _ in _imports(f)}
    assert ("infopt.codegen.expr", "Buffer") in got
    lazy = {(t, n) for t, n, _ in _imports(ROOT / "codegen" / "lower_elementwise.py")}
    assert ("infopt.codegen.walk", "substitute_stmt") in lazy, "imports inside functions are read too"
