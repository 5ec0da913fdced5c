"""infopt's import structure stays a layered tree: no import cycle (imports inside functions count too), no private
name or private module imported from another module, and no layer importing one above it (ARCHITECTURE.md)."""
from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "infopt"
# The layers of ARCHITECTURE.md, bottom up: a module may import its own layer and the layers below it.
LAYERS = {
    "grading": 0, "ir": 1, "data": 1, "models": 1, "passes": 2, "codegen": 3, "schedule": 4, "accel": 5,
    "quant": 6, "runtime": 6, "mlir": 6, "pipelines": 6, "llm": 6, "profile": 6, "kernels": 6, "serve": 6,
    "tinygrad": 6, "widgets": 7,
}

# Leaf modules a lower layer may use although their package sits higher: each imports nothing of infopt (checked).
LEAF_ALLOWANCES = {
    "infopt.runtime.onnxruntime_session": "onnxruntime sessions; the NCHWc pass asks onnxruntime for its block size",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(imported infopt module, names taken from it, line) for every import statement anywhere in the file."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("infopt"):
                    out.append((alias.name, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node.level, node.module) if node.level else (node.module or "")
            if not target.startswith("infopt"):
                continue
            names = [a.name for a in node.names]
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
            if subs:   # `from . import registry` imports the submodule
                out += [(s, [], node.lineno) for s in subs]
                names = [n for n in names if f"{target}.{n}" not in modules]
                if not names:
                    continue
            out.append((target, names, node.lineno))
    return out


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        for target, names, line in imports_of(name, path, modules):
            if target in modules and target != name:
                edges[name].add(target)
            leaf = target.rsplit(".", 1)[-1]
            if leaf.startswith("_") and not leaf.startswith("__"):
                private.append(f"{name} (line {line}) imports the private module {target}")
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    private.append(f"{name} (line {line}) imports the private name {n} from {target}")
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_anywhere_in_infopt():
    edges, _ = _graph()
    cycles = _cycles(edges)
    assert not cycles, "import cycles (function-level imports count):\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_or_module_is_imported_across_modules():
    _, private = _graph()
    assert not private, "\n".join(private)


def test_no_layer_imports_a_layer_above_it():
    edges, _ = _graph()
    bad = []
    for src, targets in edges.items():
        a = src.split(".")[1] if "." in src else None
        for dst in targets:
            b = dst.split(".")[1] if "." in dst else None
            if a is None or b is None or a == b or dst in LEAF_ALLOWANCES:
                continue
            if a not in LAYERS or b not in LAYERS:
                bad.append(f"{src} -> {dst}: package {a if a not in LAYERS else b!r} has no layer in LAYERS")
            elif LAYERS[b] > LAYERS[a]:
                bad.append(f"{src} (layer {LAYERS[a]}) imports {dst} (layer {LAYERS[b]})")
    assert not bad, "\n".join(sorted(bad))


def test_leaf_allowances_import_nothing_of_infopt():
    edges, _ = _graph()
    for leaf, why in LEAF_ALLOWANCES.items():
        assert leaf in edges, f"{leaf} ({why}) no longer exists: drop it from LEAF_ALLOWANCES"
        assert not edges[leaf], f"{leaf} is allowed below its layer only as a leaf, but imports {sorted(edges[leaf])}"


def test_the_checker_sees_a_planted_cycle_and_a_private_import():
    edges = {"infopt.a": {"infopt.b"}, "infopt.b": {"infopt.c"}, "infopt.c": {"infopt.a"}, "infopt.d": set()}
    assert _cycles(edges) == [["infopt.a", "infopt.b", "infopt.c"]]
    assert _resolve("infopt.ir.ops.nn", False, 2, "graph") == "infopt.ir.graph"
    assert _resolve("infopt.ir.ops", True, 1, "registry") == "infopt.ir.ops.registry"
