"""Constant folding: evaluate, once and ahead of time, every node whose inputs are all constants."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import get_op
from ..ir.types import TensorType
from .base import Pass


class ConstantFolding(Pass):
    """Replace nodes whose inputs are all constants (and Shape of a statically typed value) by their value.

    Each foldable node is evaluated with the op registry's reference implementation and its outputs become
    initializers. Results larger than ``max_bytes`` are left as computation (folding must not bloat the model).
    Outputs that are graph outputs are kept as nodes, so the graph's interface stays a computation.
    """

    name = "constant_folding"

    def __init__(self, max_bytes: int = 64 << 20, fold_shapes: bool = True) -> None:
        self.max_bytes = max_bytes
        self.fold_shapes = fold_shapes

    def apply(self, graph: Graph) -> dict[str, Any]:
        folded = too_big = 0
        dead = []
        for node in graph.toposort():
            if any(o in graph.outputs for o in node.outputs):
                continue
            if node.op == "Shape" and self.fold_shapes and node.inputs and node.inputs[0] in graph.types:
                shape = np.array(graph.type_of(node.inputs[0]).shape, dtype=np.int64)
                values = [shape[node.attrs.get("start", 0): node.attrs.get("end", None)]]
            elif all(i == "" or i in graph.initializers for i in node.inputs):
                if any(graph.type_of(o).nbytes > self.max_bytes for o in node.outputs if o in graph.types):
                    too_big += 1
                    continue
                args = [graph.initializers[i] if i else None for i in node.inputs]
                values = get_op(node.op, node).compute(args, node.attrs)
            else:
                continue
            for out, v in zip(node.outputs, values):
                if out:
                    t = graph.types.get(out)
                    v = np.asarray(v)
                    if t is not None:
                        v = v.astype(t.numpy_dtype, copy=False)
                    graph.initializers[out] = v
                    graph.types[out] = t or TensorType.of(v)
            dead.append(node)
            folded += 1
        if not dead:
            return {"reason": "no node has only constant inputs" + (f" ({too_big} too large to fold)" if too_big else "")}
        ids = {id(n) for n in dead}
        graph.nodes = [n for n in graph.nodes if id(n) not in ids]
        graph.prune_initializers()
        return {"folded": folded, "too_large": too_big}
