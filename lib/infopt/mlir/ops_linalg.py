"""MLIR emitters of the compute-heavy ops as named linalg ops: matmul, conv_2d_nchw_fchw, pooling_nchw_max, fill.

Batched or broadcasting MatMul has no named op that both MLIR and xDSL know, so it is a `linalg.generic` with a
reduction iterator. Biases initialise the output (a broadcasting generic) and the named op accumulates into it,
the way MLIR front ends emit them.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node
from ..ir.ops.nn import window_params
from .emitter import EmitContext, MlirEmitError, float_elem, register_emitter
from .mlir_text import tensor_type
from .ops_elementwise import broadcast_map


def transposed(ctx: EmitContext, value: str, elem: str) -> str:
    """The 2-D value transposed: folded when it is a constant, else a `linalg.transpose`."""
    const = ctx.constant_of(value)
    if const is not None:
        return ctx.array_constant(np.ascontiguousarray(const.T), ctx.type_of(value).dtype)
    shape = ctx.type_of(value).shape
    out_shape = (shape[1], shape[0])
    init = ctx.empty(out_shape, elem)
    res = ctx.fresh("tr")
    ctx.line(f"{res} = linalg.transpose ins({ctx.get(value)} : {ctx.ttype(value)}) outs({init} : "
             f"{tensor_type(out_shape, ctx.type_of(value).dtype)}) permutation = [1, 0]")
    return res


def broadcast_init(ctx: EmitContext, value: str, out_shape: tuple[int, ...], exprs: list[str], elem: str,
                   scale: float = 1.0) -> str:
    """A tensor of `out_shape` holding `scale * value` broadcast along the maps' missing dims (a bias as init)."""
    const = ctx.constant_of(value)
    src = ctx.array_constant((scale * const).astype(const.dtype), ctx.type_of(value).dtype) if const is not None \
        else ctx.get(value)
    in_shape = ctx.type_of(value).shape
    n = len(out_shape)
    body_scale = scale if const is None and scale != 1.0 else None
    s = ctx.scalar(body_scale, elem) if body_scale is not None else None

    def body(args: list[str], out: str) -> list[str]:
        if s is None:
            return [args[0]]
        r = ctx.fresh("t")
        return [f"{r} = arith.mulf {args[0]}, {s} : {elem}", r]
    return ctx.generic([(src, in_shape, exprs)], out_shape, [f"d{i}" for i in range(n)], ["parallel"] * n, body,
                       elem=elem)


def emit_matmul(ctx: EmitContext, node: Node) -> None:
    """MatMul: `linalg.matmul` for 2-D operands, a `linalg.generic` for batched and broadcast ones."""
    elem = float_elem(ctx, node)
    a, b = node.inputs
    sa, sb = ctx.type_of(a).shape, ctx.type_of(b).shape
    out_shape = ctx.type_of(node.outputs[0]).shape
    if len(sa) < 2 or len(sb) < 2:
        raise MlirEmitError(f"node {node.label}: MatMul of a 1-D operand ({sa} x {sb}); reshape it to 2-D first")
    init = ctx.filled(out_shape, 0.0, elem)
    out_t = tensor_type(out_shape, ctx.type_of(node.outputs[0]).dtype)
    if len(sa) == len(sb) == 2:
        res = ctx.fresh("mm")
        ctx.line(f"{res} = linalg.matmul ins({ctx.get(a)}, {ctx.get(b)} : {ctx.ttype(a)}, {ctx.ttype(b)}) "
                 f"outs({init} : {out_t}) -> {out_t}")
        ctx.bind(node.outputs[0], res)
        return
    nb = len(out_shape) - 2
    m, n, k = f"d{nb}", f"d{nb + 1}", f"d{nb + 2}"
    batch = out_shape[:nb]

    def operand_map(shape: tuple[int, ...], last: list[str]) -> list[str]:
        lead = nb - (len(shape) - 2)
        return [f"d{i + lead}" if d == batch[i + lead] else "0" for i, d in enumerate(shape[:-2])] + last

    def body(args: list[str], out: str) -> list[str]:
        p, s = ctx.fresh("t"), ctx.fresh("t")
        return [f"{p} = arith.mulf {args[0]}, {args[1]} : {elem}", f"{s} = arith.addf {out}, {p} : {elem}", s]
    res = ctx.generic([(ctx.get(a), sa, operand_map(sa, [m, k])), (ctx.get(b), sb, operand_map(sb, [k, n]))],
                      out_shape, [f"d{i}" for i in range(nb + 2)], ["parallel"] * (nb + 2) + ["reduction"], body,
                      init=init, elem=elem)
    ctx.bind(node.outputs[0], res)


def emit_gemm(ctx: EmitContext, node: Node) -> None:
    """Gemm: Y = alpha * A' B' + beta * C as a bias-initialised `linalg.matmul` (constant transposes folded)."""
    elem = float_elem(ctx, node)
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    a, b = node.inputs[0], node.inputs[1]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    a_ssa = transposed(ctx, a, elem) if node.attrs.get("transA", 0) else ctx.get(a)
    b_ssa = transposed(ctx, b, elem) if node.attrs.get("transB", 0) else ctx.get(b)
    sa, sb = ctx.type_of(a).shape, ctx.type_of(b).shape
    sa = sa[::-1] if node.attrs.get("transA", 0) else sa
    sb = sb[::-1] if node.attrs.get("transB", 0) else sb
    out_shape = ctx.type_of(node.outputs[0]).shape
    dt = ctx.type_of(node.outputs[0]).dtype
    out_t = tensor_type(out_shape, dt)
    if c is not None and alpha == 1.0:
        init = broadcast_init(ctx, c, out_shape, broadcast_map(ctx.type_of(c).shape, out_shape), elem, beta)
    else:
        init = ctx.filled(out_shape, 0.0, elem)
    res = ctx.fresh("mm")
    ctx.line(f"{res} = linalg.matmul ins({a_ssa}, {b_ssa} : {tensor_type(sa, dt)}, {tensor_type(sb, dt)}) "
             f"outs({init} : {out_t}) -> {out_t}")
    if alpha != 1.0:
        al = ctx.scalar(alpha, elem)
        ins = [(res, out_shape, ["d0", "d1"])]
        if c is not None:
            ins.append((broadcast_init(ctx, c, out_shape, broadcast_map(ctx.type_of(c).shape, out_shape), elem,
                                       beta), out_shape, ["d0", "d1"]))

        def body(args: list[str], out: str) -> list[str]:
            r = ctx.fresh("t")
            lines = [f"{r} = arith.mulf {args[0]}, {al} : {elem}"]
            if len(args) > 1:
                s = ctx.fresh("t")
                lines += [f"{s} = arith.addf {r}, {args[1]} : {elem}"]
                r = s
            return lines + [r]
        res = ctx.generic(ins, out_shape, ["d0", "d1"], ["parallel", "parallel"], body, elem=elem)
    ctx.bind(node.outputs[0], res)


def padded(ctx: EmitContext, value: str, begin: list[int], end: list[int], fill: float, elem: str) -> tuple[str, tuple]:
    """`tensor.pad` of the spatial dims of an NCHW value (returns it unchanged when nothing is padded)."""
    shape = ctx.type_of(value).shape
    if not any(begin) and not any(end):
        return ctx.get(value), shape
    new = shape[:2] + tuple(d + b + e for d, b, e in zip(shape[2:], begin, end))
    dt = ctx.type_of(value).dtype
    f = ctx.scalar(fill, elem)
    res = ctx.fresh("pad")
    idx = ", ".join(f"{ctx.fresh('i')}: index" for _ in shape)
    ctx.line(f"{res} = tensor.pad {ctx.get(value)} low[0, 0, {', '.join(map(str, begin))}] "
             f"high[0, 0, {', '.join(map(str, end))}] {{")
    ctx.lines.append(f"  ^bb0({idx}):")
    ctx.line(f"  tensor.yield {f} : {elem}")
    ctx.line(f"}} : {tensor_type(shape, dt)} to {tensor_type(new, dt)}")
    return res, new


def _window(ctx: EmitContext, node: Node, kernel: list[int]) -> dict:
    x = ctx.type_of(node.inputs[0])
    if x.rank != 4 or len(kernel) != 2:
        raise MlirEmitError(f"node {node.label}: {node.op} on a rank-{x.rank} input; the emitter handles 2-D "
                            "windows on NCHW tensors")
    p = window_params(node.op, x, kernel, node.attrs)
    out = ctx.type_of(node.outputs[0]).shape[2:]
    # ceil_mode's last window may reach past the end padding: pad as far as the last window reads
    need = [(o - 1) * s + e for o, s, e in zip(out, p["strides"], p["eff"])]
    p["end"] = [max(en, n - d - b) for en, n, d, b in zip(p["end"], need, x.shape[2:], p["begin"])]
    return p


def _dense_i64(values: list[int]) -> str:
    if len(set(values)) == 1:
        return f"dense<{values[0]}> : tensor<{len(values)}xi64>"
    return f"dense<[{', '.join(map(str, values))}]> : tensor<{len(values)}xi64>"


def emit_conv(ctx: EmitContext, node: Node) -> None:
    """Conv (2-D, one group): `tensor.pad` + `linalg.conv_2d_nchw_fchw` accumulating into the broadcast bias."""
    elem = float_elem(ctx, node)
    if int(node.attrs.get("group", 1)) != 1:
        raise MlirEmitError(f"node {node.label}: Conv with group={node.attrs['group']}; the emitter handles "
                            "group=1 (linalg.conv_2d_nchw_fchw)")
    w = node.inputs[1]
    kernel = list(ctx.type_of(w).shape[2:])
    p = _window(ctx, node, kernel)
    x_ssa, x_shape = padded(ctx, node.inputs[0], p["begin"], p["end"], 0.0, elem)
    out_shape = ctx.type_of(node.outputs[0]).shape
    dt = ctx.type_of(node.outputs[0]).dtype
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    init = broadcast_init(ctx, bias, out_shape, ["d1"], elem) if bias else ctx.filled(out_shape, 0.0, elem)
    out_t = tensor_type(out_shape, dt)
    res = ctx.fresh("conv")
    ctx.line(f"{res} = linalg.conv_2d_nchw_fchw {{dilations = {_dense_i64(p['dilations'])}, strides = "
             f"{_dense_i64(p['strides'])}}} ins({x_ssa}, {ctx.get(w)} : {tensor_type(x_shape, dt)}, {ctx.ttype(w)}) "
             f"outs({init} : {out_t}) -> {out_t}")
    ctx.bind(node.outputs[0], res)


def emit_maxpool(ctx: EmitContext, node: Node) -> None:
    """MaxPool (2-D): pad with -inf, then `linalg.pooling_nchw_max` into a -inf fill."""
    elem = float_elem(ctx, node)
    if len(node.outputs) > 1 and node.outputs[1]:
        raise MlirEmitError(f"node {node.label}: MaxPool's Indices output is not emitted")
    kernel = [int(k) for k in node.attrs["kernel_shape"]]
    p = _window(ctx, node, kernel)
    x_ssa, x_shape = padded(ctx, node.inputs[0], p["begin"], p["end"], -np.inf, elem)
    out_shape = ctx.type_of(node.outputs[0]).shape
    dt = ctx.type_of(node.outputs[0]).dtype
    init = ctx.filled(out_shape, -np.inf, elem)
    window = ctx.empty(tuple(kernel), elem)
    out_t = tensor_type(out_shape, dt)
    res = ctx.fresh("pool")
    ctx.line(f"{res} = linalg.pooling_nchw_max {{dilations = {_dense_i64(p['dilations'])}, strides = "
             f"{_dense_i64(p['strides'])}}} ins({x_ssa}, {window} : {tensor_type(x_shape, dt)}, "
             f"{tensor_type(tuple(kernel), dt)}) outs({init} : {out_t}) -> {out_t}")
    ctx.bind(node.outputs[0], res)


def emit_global_average_pool(ctx: EmitContext, node: Node) -> None:
    """GlobalAveragePool: a `linalg.generic` summing over H and W, a scaling generic, and the (N, C, 1, 1) shape."""
    from .ops_shape import reshape

    elem = float_elem(ctx, node)
    shape = ctx.type_of(node.inputs[0]).shape
    out_t = ctx.type_of(node.outputs[0])
    n = len(shape)
    nc = shape[:2]

    def add(args: list[str], out: str) -> list[str]:
        s = ctx.fresh("t")
        return [f"{s} = arith.addf {out}, {args[0]} : {elem}", s]
    summed = ctx.generic([(ctx.get(node.inputs[0]), shape, [f"d{i}" for i in range(n)])], nc, ["d0", "d1"],
                         ["parallel", "parallel"] + ["reduction"] * (n - 2), add, init=ctx.filled(nc, 0.0, elem),
                         elem=elem)
    inv = ctx.scalar(1.0 / float(np.prod(shape[2:])), elem)

    def scale(args: list[str], out: str) -> list[str]:
        s = ctx.fresh("t")
        return [f"{s} = arith.mulf {args[0]}, {inv} : {elem}", s]
    mean = ctx.generic([(summed, nc, ["d0", "d1"])], nc, ["d0", "d1"], ["parallel", "parallel"], scale, elem=elem)
    ctx.bind(node.outputs[0], reshape(ctx, mean, nc, out_t.shape, out_t.dtype))


def register() -> None:
    """Register this module's emitters."""
    for op, fn in (("MatMul", emit_matmul), ("Gemm", emit_gemm), ("Conv", emit_conv), ("MaxPool", emit_maxpool),
                   ("GlobalAveragePool", emit_global_average_pool)):
        register_emitter(op, fn)
