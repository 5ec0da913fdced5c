"""The import graph of infopt.ir: no cycle inside the package (lazy imports count), no private name (or private
module) imported across its modules, and no import of a higher layer (passes, codegen, accel, widgets...)."""
from __future__ import annotations

import ast
from pathlib import Path

import infopt.ir

IR = Path(infopt.ir.__file__).parent
HIGHER = ("infopt.passes", "infopt.codegen", "infopt.schedule", "infopt.accel", "infopt.widgets", "infopt.quant",
          "infopt.runtime", "infopt.models")


def _modules() -> dict[str, Path]:
    mods = {}
    for p in IR.rglob("*.py"):
        parts = ("infopt",) + p.relative_to(IR.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, str]]:
    """(imported module, imported name) for every import in the file, function-level ones included."""
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((full if full in mods else base, a.name))
        elif isinstance(node, ast.Import):
            out.extend((a.name, "") for a in node.names)
    return out


def test_no_import_cycle_inside_ir():
    mods = _modules()
    edges = {m: {t for t, _ in _imports(m, p, mods) if t in mods and t != m} for m, p in mods.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(u: str, stack: list[str]) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges[u]):
            if state.get(v) == 1:
                cycles.append(" -> ".join(stack[stack.index(v):] + [v]))
            elif not state.get(v):
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for m in sorted(edges):
        if not state.get(m):
            visit(m, [])
    assert not cycles, "import cycles inside infopt.ir:\n" + "\n".join(cycles)


def test_no_private_name_crosses_modules_and_no_higher_layer_is_imported():
    mods = _modules()
    private, upward = [], []
    for m, p in mods.items():
        for target, name in _imports(m, p, mods):
            if target in mods and target != m and (name.startswith("_") or target.rsplit(".", 1)[-1].startswith("_")):
                private.append(f"{m} imports {target}.{name}")
            if target.startswith(HIGHER):
                upward.append(f"{m} imports {target}")
    assert not private, "private names imported across modules: " + "; ".join(private)
    assert not upward, "infopt.ir imports a higher layer: " + "; ".join(upward)
