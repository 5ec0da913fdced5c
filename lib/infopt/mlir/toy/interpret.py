"""What a Toy program means, in numpy: the prints it makes. The reference every transformation must preserve."""
from __future__ import annotations

from typing import Any

import numpy as np


def run_toy(module: Any) -> list[np.ndarray]:
    """The arrays `toy.print` prints, in order, running the Toy ops of `@main` with numpy."""
    main = next((op for op in module.walk() if op.name == "func.func" and op.sym_name.data == "main"), None)
    if main is None:
        raise ValueError("run_toy runs a module's @main, and this module has none")
    env: dict = {}
    printed = []
    for op in main.body.block.ops:
        name = op.name
        if name == "toy.constant":
            shape = tuple(op.value.type.get_shape())
            env[op.res] = np.array([float(v) for v in op.value.get_values()]).reshape(shape)
        elif name == "toy.transpose":
            env[op.res] = env[op.arg].T
        elif name in ("toy.add", "toy.mul"):
            a, b = env[op.lhs], env[op.rhs]
            if a.shape != b.shape:
                raise ValueError(f"{name}: shapes {a.shape} and {b.shape} differ")
            env[op.res] = a + b if name == "toy.add" else a * b
        elif name == "toy.reshape":
            env[op.res] = env[op.arg].reshape(tuple(op.res.type.get_shape()))
        elif name == "toy.print":
            printed.append(np.array(env[op.arg]))
        elif name == "func.return":
            break
        else:
            raise ValueError(f"run_toy runs Toy ops only, found {name}")
    return printed
