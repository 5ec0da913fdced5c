"""Chapter 4 of the tutorial: shape inference as an interface-driven pass. Every op whose result is still unranked
and whose operands are all ranked is asked, through the ShapeInference interface, to compute its result type;
the pass repeats until no unranked result is left (an op that cannot be inferred is an error naming it)."""
from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import UnrankedTensorType

from .dialect import ShapeInference


def infer_shapes(module: Any) -> int:
    """Infer every unranked Toy result in `module` (in place); returns how many ops were inferred."""
    done = 0
    while True:
        pending = [op for op in module.walk() if any(isinstance(r.type, UnrankedTensorType) for r in op.results)]
        if not pending:
            return done
        ready = [op for op in pending if not any(isinstance(v.type, UnrankedTensorType) for v in op.operands)]
        if not ready:
            raise ValueError(f"shape inference is stuck at {pending[0].name}: its operands are unranked")
        for op in ready:
            if not isinstance(op, ShapeInference):
                raise ValueError(f"{op.name} has an unranked result but does not implement ShapeInference")
            op.infer_shapes()
            done += 1
