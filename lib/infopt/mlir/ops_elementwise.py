"""MLIR emitters of elementwise ops: one `linalg.generic` each, numpy broadcasting spelled as indexing maps."""
from __future__ import annotations

from ..ir.graph import Node
from .emitter import EmitContext, MlirEmitError, float_elem, register_emitter

# op -> payload lines for (args, elem); the last line is the result value
UNARY = {
    "Relu": lambda a, e, c: [f"%r = arith.maximumf {a}, {c(0.0)} : {e}", "%r"],
    "Neg": lambda a, e, c: [f"%r = arith.negf {a} : {e}", "%r"],
    "Exp": lambda a, e, c: [f"%r = math.exp {a} : {e}", "%r"],
    "Log": lambda a, e, c: [f"%r = math.log {a} : {e}", "%r"],
    "Sqrt": lambda a, e, c: [f"%r = math.sqrt {a} : {e}", "%r"],
    "Tanh": lambda a, e, c: [f"%r = math.tanh {a} : {e}", "%r"],
    "Erf": lambda a, e, c: [f"%r = math.erf {a} : {e}", "%r"],
    "Sigmoid": lambda a, e, c: [f"%n = arith.negf {a} : {e}", f"%x = math.exp %n : {e}",
                                f"%d = arith.addf %x, {c(1.0)} : {e}", f"%r = arith.divf {c(1.0)}, %d : {e}", "%r"],
}
CONSTANTS = {"Relu": (0.0,), "Sigmoid": (1.0,)}   # the scalars each payload uses
BINARY = {"Add": "arith.addf", "Sub": "arith.subf", "Mul": "arith.mulf", "Div": "arith.divf",
          "Max": "arith.maximumf", "Min": "arith.minimumf", "Pow": "math.powf"}


def broadcast_map(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[str]:
    """The indexing-map results that read an input of `in_shape` broadcast (numpy rules) to `out_shape`."""
    lead = len(out_shape) - len(in_shape)
    if lead < 0:
        raise MlirEmitError(f"shape {in_shape} does not broadcast to {out_shape}")
    out = []
    for i, d in enumerate(in_shape):
        j = i + lead
        if d == out_shape[j]:
            out.append(f"d{j}")
        elif d == 1:
            out.append("0")
        else:
            raise MlirEmitError(f"shape {in_shape} does not broadcast to {out_shape} (dim {i}: {d} vs {out_shape[j]})")
    return out


def renamed(ctx: EmitContext, lines: list[str]) -> list[str]:
    """Payload lines with their local names (%r, %n, ...) made unique in the function."""
    import re

    local = {}
    for ln in lines:
        m = re.match(r"(%[a-z]+) =", ln)
        if m and m.group(1) not in local:
            local[m.group(1)] = ctx.fresh("t")
    pattern = re.compile("|".join(re.escape(k) + r"\b" for k in sorted(local, key=len, reverse=True))) if local else None
    return [pattern.sub(lambda m: local[m.group(0)], ln) if pattern else ln for ln in lines]


def elementwise(ctx: EmitContext, node: Node, payload) -> None:
    """One `linalg.generic` over the output's shape; `payload(args, elem)` gives the body's lines."""
    elem = float_elem(ctx, node)
    out_shape = ctx.type_of(node.outputs[0]).shape
    ins = [(ctx.get(v), ctx.type_of(v).shape, broadcast_map(ctx.type_of(v).shape, out_shape)) for v in node.inputs]
    n = len(out_shape)
    res = ctx.generic(ins, out_shape, [f"d{i}" for i in range(n)], ["parallel"] * n,
                      lambda args, out: renamed(ctx, payload(args, elem)), elem=elem)
    ctx.bind(node.outputs[0], res)


def emit_unary(ctx: EmitContext, node: Node) -> None:
    """Relu, Neg, Abs, Exp, Log, Sqrt, Tanh, Erf, Sigmoid."""
    fn, elem = UNARY[node.op], float_elem(ctx, node)
    # the payload's constants are made before the generic, outside its body, where later ops can reuse them
    consts = {v: ctx.scalar(v, elem) for v in CONSTANTS.get(node.op, ())}
    elementwise(ctx, node, lambda args, elem: fn(args[0], elem, consts.__getitem__))


def emit_gelu(ctx: EmitContext, node: Node) -> None:
    """Gelu (exact): 0.5 * x * (1 + erf(x / sqrt 2))."""
    if str(node.attrs.get("approximate", "none")) != "none":
        raise MlirEmitError(f"node {node.label}: Gelu with approximate={node.attrs['approximate']!r}; the emitter "
                            "writes the exact (erf) form only")
    elem = float_elem(ctx, node)
    c = {v: ctx.scalar(v, elem) for v in (0.5, 1.0, 2.0 ** -0.5)}
    elementwise(ctx, node, lambda args, e: [
        f"%a = arith.mulf {args[0]}, {c[2.0 ** -0.5]} : {e}", f"%f = math.erf %a : {e}",
        f"%p = arith.addf %f, {c[1.0]} : {e}", f"%h = arith.mulf {args[0]}, %p : {e}",
        f"%r = arith.mulf %h, {c[0.5]} : {e}", "%r"])


def emit_binary(ctx: EmitContext, node: Node) -> None:
    """Add, Sub, Mul, Div, Max, Min, Pow with numpy broadcasting."""
    if len(node.inputs) != 2:
        raise MlirEmitError(f"node {node.label}: {node.op} with {len(node.inputs)} inputs; the emitter takes two")
    op = BINARY[node.op]
    elementwise(ctx, node, lambda args, elem: [f"%r = {op} {args[0]}, {args[1]} : {elem}", "%r"])


def register() -> None:
    """Register this module's emitters."""
    for op in UNARY:
        register_emitter(op, emit_unary)
    for op in BINARY:
        register_emitter(op, emit_binary)
    register_emitter("Gelu", emit_gelu)
