"""MLIR emitters of the normalizations: Softmax and LayerNormalization as chains of reducing and elementwise
`linalg.generic`s, inference BatchNormalization as one per-channel multiply-add."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node
from .emitter import EmitContext, MlirEmitError, float_elem, register_emitter
from .ops_elementwise import broadcast_map


def _reduce(ctx: EmitContext, x: str, shape: tuple[int, ...], axes: list[int], init: float, combine: str,
            elem: str, pre=None) -> tuple[str, tuple[int, ...], list[str]]:
    """Reduce `x` over `axes` with `combine` (an arith op); returns (value, its shape, its map over x's dims).
    `pre(arg) -> (lines, value)` transforms each element first."""
    n = len(shape)
    keep = [i for i in range(n) if i not in axes]
    out_shape = tuple(shape[i] for i in keep)
    out_map = [f"d{i}" for i in keep]

    def body(args: list[str], out: str) -> list[str]:
        lines, v = pre(args[0]) if pre else ([], args[0])
        r = ctx.fresh("t")
        return lines + [f"{r} = {combine} {out}, {v} : {elem}", r]
    res = ctx.generic([(x, shape, [f"d{i}" for i in range(n)])], out_shape, out_map,
                      ["reduction" if i in axes else "parallel" for i in range(n)], body,
                      init=ctx.filled(out_shape, init, elem), elem=elem)
    return res, out_shape, out_map


def emit_softmax(ctx: EmitContext, node: Node) -> None:
    """Softmax along one axis: max, exp(x - max), sum, divide (four generics, numerically stable)."""
    elem = float_elem(ctx, node)
    x = ctx.get(node.inputs[0])
    shape = ctx.type_of(node.inputs[0]).shape
    n = len(shape)
    axis = int(node.attrs.get("axis", -1)) % max(n, 1)
    ident = [f"d{i}" for i in range(n)]
    mx, red_shape, red_map = _reduce(ctx, x, shape, [axis], -np.inf, "arith.maximumf", elem)

    def shifted_exp(args: list[str], out: str) -> list[str]:
        d, e = ctx.fresh("t"), ctx.fresh("t")
        return [f"{d} = arith.subf {args[0]}, {args[1]} : {elem}", f"{e} = math.exp {d} : {elem}", e]
    ex = ctx.generic([(x, shape, ident), (mx, red_shape, red_map)], shape, ident, ["parallel"] * n, shifted_exp,
                     elem=elem)
    total, _, _ = _reduce(ctx, ex, shape, [axis], 0.0, "arith.addf", elem)

    def divide(args: list[str], out: str) -> list[str]:
        q = ctx.fresh("t")
        return [f"{q} = arith.divf {args[0]}, {args[1]} : {elem}", q]
    res = ctx.generic([(ex, shape, ident), (total, red_shape, red_map)], shape, ident, ["parallel"] * n, divide,
                      elem=elem)
    ctx.bind(node.outputs[0], res)


def emit_layernorm(ctx: EmitContext, node: Node) -> None:
    """LayerNormalization over the dims from `axis` on: mean, centred values, variance, scale and shift."""
    elem = float_elem(ctx, node)
    if any(o for o in node.outputs[1:]) and any(o in ctx.graph.outputs or _used(ctx, o) for o in node.outputs[1:] if o):
        raise MlirEmitError(f"node {node.label}: LayerNormalization's Mean / InvStdDev outputs are not emitted")
    xv = node.inputs[0]
    x, shape = ctx.get(xv), ctx.type_of(xv).shape
    n = len(shape)
    axis = int(node.attrs.get("axis", -1)) % n
    axes = list(range(axis, n))
    count = float(np.prod([shape[i] for i in axes]))
    ident = [f"d{i}" for i in range(n)]
    s1, red_shape, red_map = _reduce(ctx, x, shape, axes, 0.0, "arith.addf", elem)
    inv_n = ctx.scalar(1.0 / count, elem)

    def centre(args: list[str], out: str) -> list[str]:
        m, d = ctx.fresh("t"), ctx.fresh("t")
        return [f"{m} = arith.mulf {args[1]}, {inv_n} : {elem}", f"{d} = arith.subf {args[0]}, {m} : {elem}", d]
    d = ctx.generic([(x, shape, ident), (s1, red_shape, red_map)], shape, ident, ["parallel"] * n, centre, elem=elem)

    def square(v: str):
        q = ctx.fresh("t")
        return [f"{q} = arith.mulf {v}, {v} : {elem}"], q
    s2, _, _ = _reduce(ctx, d, shape, axes, 0.0, "arith.addf", elem, pre=square)
    eps = ctx.scalar(float(node.attrs.get("epsilon", 1e-5)), elem)
    ins = [(d, shape, ident), (s2, red_shape, red_map)]
    for v in node.inputs[1:3]:
        if v:
            ins.append((ctx.get(v), ctx.type_of(v).shape, broadcast_map(ctx.type_of(v).shape, shape)))

    def normalise(args: list[str], out: str) -> list[str]:
        var, ve, r, y = ctx.fresh("t"), ctx.fresh("t"), ctx.fresh("t"), ctx.fresh("t")
        lines = [f"{var} = arith.mulf {args[1]}, {inv_n} : {elem}", f"{ve} = arith.addf {var}, {eps} : {elem}",
                 f"{r} = math.rsqrt {ve} : {elem}", f"{y} = arith.mulf {args[0]}, {r} : {elem}"]
        for extra, op in zip(args[2:], ("arith.mulf", "arith.addf")):
            z = ctx.fresh("t")
            lines.append(f"{z} = {op} {y}, {extra} : {elem}")
            y = z
        return lines + [y]
    ctx.bind(node.outputs[0], ctx.generic(ins, shape, ident, ["parallel"] * n, normalise, elem=elem))


def _used(ctx: EmitContext, value: str) -> bool:
    return any(value in nd.inputs for nd in ctx.graph.nodes)


def emit_batchnorm(ctx: EmitContext, node: Node) -> None:
    """BatchNormalization (inference, constant statistics): y = x * a + b per channel, a and b folded here."""
    elem = float_elem(ctx, node)
    consts = [ctx.constant_of(v) for v in node.inputs[1:5]]
    if any(c is None for c in consts):
        raise MlirEmitError(f"node {node.label}: BatchNormalization with computed statistics; the emitter folds "
                            "constant scale, bias, mean and variance only")
    scale, bias, mean, var = (c.astype(np.float64) for c in consts)
    a = scale / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
    b = bias - mean * a
    t = ctx.type_of(node.outputs[0])
    a_ssa, b_ssa = (ctx.array_constant(v.astype(t.numpy_dtype), t.dtype) for v in (a, b))
    shape = ctx.type_of(node.inputs[0]).shape
    n = len(shape)
    ident = [f"d{i}" for i in range(n)]

    def body(args: list[str], out: str) -> list[str]:
        m, s = ctx.fresh("t"), ctx.fresh("t")
        return [f"{m} = arith.mulf {args[0]}, {args[1]} : {elem}", f"{s} = arith.addf {m}, {args[2]} : {elem}", s]
    res = ctx.generic([(ctx.get(node.inputs[0]), shape, ident), (a_ssa, a.shape, ["d1"]), (b_ssa, b.shape, ["d1"])],
                      shape, ident, ["parallel"] * n, body, elem=elem)
    ctx.bind(node.outputs[0], res)


def register() -> None:
    """Register this module's emitters."""
    register_emitter("Softmax", emit_softmax)
    register_emitter("LayerNormalization", emit_layernorm)
    register_emitter("BatchNormalization", emit_batchnorm)
