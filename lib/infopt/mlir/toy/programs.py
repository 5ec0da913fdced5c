"""Random Toy programs for tests and grading: chains of transposes (some with other users), elementwise ops,
reshaped declarations and prints, always well formed."""
from __future__ import annotations

import numpy as np


def toy_literal(values) -> str:
    """A Toy array literal of integer `values` (any nesting, e.g. `[[1, 2], [3, 4]]` for a 2 x 2 array)."""
    return "[" + ", ".join(toy_literal(v) if np.ndim(v) else str(int(v)) for v in values) + "]"


def random_toy_source(rng: np.random.Generator, statements: int = 6) -> str:
    """Toy source of `main`: 2-D array literals, `var` chains of transpose/+/*, shaped declarations, prints."""
    lines = []
    shapes: dict[str, tuple[int, int]] = {}
    k = 0

    def fresh() -> str:
        nonlocal k
        k += 1
        return f"v{k}"

    def literal(shape: tuple[int, int]) -> str:
        return toy_literal(rng.integers(-5, 6, shape))

    for _ in range(2):
        name = fresh()
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        lines.append(f"  var {name} = {literal(shape)};")
        shapes[name] = shape
    for _ in range(statements):
        name = fresh()
        src = list(shapes)[int(rng.integers(len(shapes)))]
        kind = rng.random()
        if kind < 0.45:
            depth = int(rng.integers(1, 5))
            expr, shape = src, shapes[src]
            for _ in range(depth):
                expr, shape = f"transpose({expr})", shape[::-1]
            lines.append(f"  var {name} = {expr};")
        elif kind < 0.7:
            same = [v for v, s in shapes.items() if s == shapes[src]]
            other = same[int(rng.integers(len(same)))]
            op = "+" if rng.random() < 0.5 else "*"
            lines.append(f"  var {name} = {src} {op} {other};")
            shape = shapes[src]
        elif kind < 0.85:
            shape = shapes[src][::-1]
            lines.append(f"  var {name}<{shape[0]}, {shape[1]}> = {literal(shapes[src])};")
        else:
            lines.append(f"  print(transpose({src}));")
            continue
        shapes[name] = shape
        if rng.random() < 0.5:
            lines.append(f"  print({name});")
    last = list(shapes)[-1]
    lines.append(f"  print({last});")
    return "def main() {\n" + "\n".join(lines) + "\n}\n"
