"""From our graphs to MLIR: an `infopt` graph as one `func.func` in the func, linalg, tensor, arith and math dialects.

    module = emit_graph(graph)          # MlirModule: .text, .func, .inputs / .outputs as (name, TensorType)

Named linalg ops where they exist (matmul, conv_2d_nchw_fchw, pooling_nchw_max, fill, transpose) and
`linalg.generic` for the rest; weights become `arith.constant` tensors. A node whose op has no emitter raises
MlirEmitError naming the node and the op. The per-op table is `infopt.mlir.emitter.EMITTERS`, filled by
`default_emitters()`.
"""
from __future__ import annotations

import re

import numpy as np
from dataclasses import dataclass, field

from ..ir.graph import Graph
from ..ir.ops import constant_value
from ..ir.types import TensorType
from . import ops_elementwise, ops_linalg, ops_norm, ops_shape
from .emitter import EMITTERS, EmitContext, MlirEmitError
from .mlir_text import INLINE_LIMIT, tensor_type


@dataclass(frozen=True)
class MlirModule:
    """MLIR text holding one function, and the graph values its arguments and results stand for."""

    text: str
    func: str
    inputs: tuple[tuple[str, TensorType], ...]
    outputs: tuple[tuple[str, TensorType], ...]
    params: tuple[tuple[str, TensorType], ...] = ()        # weights passed as arguments (after the inputs)
    param_values: dict = field(default_factory=dict, compare=False, repr=False)

    def __str__(self) -> str:
        return self.text


def default_emitters() -> dict[str, object]:
    """Register the course's emitters (elementwise, linalg, normalization, shape ops); returns the op table."""
    for module in (ops_elementwise, ops_linalg, ops_norm, ops_shape):
        module.register()
    return EMITTERS


def emittable_ops() -> list[str]:
    """The graph ops the emitter can express, sorted."""
    return sorted(default_emitters())


def _ssa_name(name: str, used: set[str]) -> str:
    base = "%" + (re.sub(r"[^A-Za-z0-9_]", "_", name) or "arg")
    if not re.match(r"%[A-Za-z_]", base):
        base = "%a" + base[1:]
    out, k = base, 0
    while out in used:
        k += 1
        out = f"{base}_{k}"
    used.add(out)
    return out


def emit_graph(graph: Graph, func: str = "main", weights: str = "inline") -> MlirModule:
    """`graph` as an MLIR module with one function `@func` (tensor arguments and results, C interface on).

    weights="inline" writes every initializer as an `arith.constant`; weights="arguments" passes the ones with
    more than INLINE_LIMIT elements as extra function arguments after the inputs (ResNet-18's 11 M weights as
    text would take mlir-translate minutes)."""
    if weights not in ("inline", "arguments"):
        raise ValueError(f"weights must be 'inline' or 'arguments', got {weights!r}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", func):
        raise ValueError(f"function name {func!r} must be a C identifier (it becomes a symbol of the shared object)")
    table = default_emitters()
    g = graph.copy()
    for node in [n for n in g.nodes if n.op == "Constant"]:   # constants become initializers, emitted on first use
        value = constant_value(graph, node.outputs[0])
        g.initializers[node.outputs[0]] = value
        g.types[node.outputs[0]] = TensorType.of(value)
    g.nodes = [n for n in g.nodes if n.op != "Constant"]
    missing = sorted({n.op for n in g.nodes} - set(table))
    if missing:
        node = next(n for n in g.nodes if n.op in missing)
        others = [m for m in missing if m != node.op]
        raise MlirEmitError(f"node {node.label}: op {node.op} has no MLIR emitter"
                            + (f" (nor have {', '.join(others)})" if others else "")
                            + f"; emittable ops: {', '.join(sorted(table))}")
    ctx = EmitContext(g)
    used: set[str] = set()
    args = []
    params = [k for k, v in g.initializers.items() if weights == "arguments" and np.asarray(v).size > INLINE_LIMIT
              and any(k in n.inputs for n in g.nodes)]
    ctx.params.update(params)
    for name in [*g.inputs, *params]:
        ssa = _ssa_name(name, used)
        ctx.bind(name, ssa)
        args.append(f"{ssa}: {ctx.ttype(name)}")
    for node in g.toposort():
        try:
            table[node.op](ctx, node)
        except MlirEmitError as err:
            raise err if node.label in str(err) else MlirEmitError(f"node {node.label}: {err}") from None
    results = [ctx.get(o) for o in g.outputs]
    out_types = [ctx.ttype(o) for o in g.outputs]
    sig = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
    body = "\n".join(ctx.lines)
    text = (f"func.func @{func}({', '.join(args)}) -> {sig} attributes {{llvm.emit_c_interface}} {{\n{body}\n"
            f"  return {', '.join(results)} : {', '.join(out_types)}\n}}\n")
    return MlirModule(text, func, tuple((i, g.type_of(i)) for i in g.inputs),
                      tuple((o, g.type_of(o)) for o in g.outputs), tuple((p, g.type_of(p)) for p in params),
                      {p: np.asarray(g.initializers[p]) for p in params})


__all__ = ["MlirEmitError", "MlirModule", "default_emitters", "emit_graph", "emittable_ops", "tensor_type"]
