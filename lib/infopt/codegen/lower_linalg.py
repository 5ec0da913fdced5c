"""Lowering MatMul, Gemm and Conv to direct loop nests (no tiling: unit 06's schedules do that).

MatMul and Gemm use the i-k-j order (the innermost loop walks rows of B and C contiguously, so LLVM
vectorizes it); Conv is the textbook seven-loop nest with ``if`` guards where padding reads outside.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.graph import Graph, Node
from ..ir.types import TensorType
from .expr import Buffer, Const, Expr, Var, cmp
from .kernel_ir import Assign, If, Kernel, Loop, Stmt, Store
from .lower_elementwise import UnsupportedLoweringError, broadcast_index, buffers_for, kernel_name, loop_nest


def matmul_kernel(name: str, a: TensorType, b: TensorType, y: TensorType, trans_a: bool = False,
                  trans_b: bool = False, alpha: float = 1.0, c: TensorType | None = None, beta: float = 1.0) -> Kernel:
    """``Y = alpha * op(A) @ op(B) (+ beta * C)`` with numpy batching (rank >= 2) and C broadcast to Y."""
    if a.rank < 2 or b.rank < 2:
        raise UnsupportedLoweringError(f"{name}: the matmul lowering needs rank >= 2 operands, got {a} and {b}; "
                                       "reshape vectors to matrices first")
    types = [a, b] + ([c] if c is not None else [])
    ins, outs = buffers_for(types, [y])
    A, B, Y = ins[0], ins[1], outs[0]
    M, N = y.shape[-2], y.shape[-1]
    K = a.shape[-2] if trans_a else a.shape[-1]
    batch = y.shape[:-2]
    i, k, j = Var("i"), Var("k"), Var("j")

    def inner(bv: list[Var]) -> list[Stmt]:
        def operand(buf: Buffer, r: Expr, col: Expr, trans: bool) -> Expr:
            lead = broadcast_index(bv, batch, buf.shape[:-2])
            return buf[lead + ((col, r) if trans else (r, col))]

        yidx = tuple(bv) + (i, j)
        if c is not None:
            init: Expr = ins[2][broadcast_index(list(yidx), y.shape, c.shape)]
            init = init * beta if beta != 1.0 else init
        else:
            init = Const(0.0, y.dtype)
        av = operand(A, i, k, trans_a)
        if alpha != 1.0:
            av = av * alpha
        return [Loop(i, 0, M, 1, (
            Loop(j, 0, N, 1, (Store(Y, yidx, init),)),
            Loop(k, 0, K, 1, (Loop(j, 0, N, 1, (
                Store(Y, yidx, Y[yidx] + av * operand(B, k, j, trans_b)),)),)),
        ))]

    return Kernel(kernel_name(name), tuple(ins + outs), tuple(loop_nest(batch, "b", inner)))


def lower_matmul(graph: Graph, node: Node) -> Kernel:
    """ONNX MatMul (rank >= 2, batch dims broadcast)."""
    a, b = graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1])
    return matmul_kernel(node.label, a, b, graph.type_of(node.outputs[0]))


def lower_gemm(graph: Graph, node: Node) -> Kernel:
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C."""
    at = node.attrs
    c = graph.type_of(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    return matmul_kernel(node.label, graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1]),
                         graph.type_of(node.outputs[0]), bool(at.get("transA", 0)), bool(at.get("transB", 0)),
                         float(at.get("alpha", 1.0)), c, float(at.get("beta", 1.0)))


def conv_kernel(name: str, x: TensorType, w: TensorType, y: TensorType, bias: TensorType | None,
                strides: Sequence[int], dilations: Sequence[int], pads_begin: Sequence[int], group: int = 1) -> Kernel:
    """Direct N-d convolution (NCHW...): y[n,m,o...] = b[m] + sum_{c,k...} w[m,c,k...] * x[n, g*Cg+c, o*s - p + k*d]."""
    types = [x, w] + ([bias] if bias is not None else [])
    ins, outs = buffers_for(types, [y])
    X, W, Y = ins[0], ins[1], outs[0]
    nd = x.rank - 2
    cg, mg = w.shape[1], w.shape[0] // group
    n, m, c = Var("n"), Var("m"), Var("c")
    os_ = [Var(f"o{d}") for d in range(nd)]
    ks = [Var(f"k{d}") for d in range(nd)]
    acc = Var("acc", y.dtype)
    pos = [o * s - p + kk * dl if p else o * s + kk * dl for o, kk, s, p, dl in zip(os_, ks, strides, pads_begin, dilations)]
    cin: Expr = c if group == 1 else (m // mg) * cg + c
    stmt: Stmt = Assign(acc, acc + W[(m, c, *ks)] * X[(n, cin, *pos)])
    for d in reversed(range(nd)):  # guard reads that land in the padding
        if pads_begin[d] or (y.shape[2 + d] - 1) * strides[d] + (w.shape[2 + d] - 1) * dilations[d] - pads_begin[d] >= x.shape[2 + d]:
            stmt = If(cmp(">=", pos[d], 0), (If(cmp("<", pos[d], x.shape[2 + d]), (stmt,)),))
    red: Stmt = stmt
    for d in reversed(range(nd)):
        red = Loop(ks[d], 0, w.shape[2 + d], 1, (red,))
    red = Loop(c, 0, cg, 1, (red,))
    init: Expr = ins[2][(m,)] if bias is not None else Const(0.0, y.dtype)
    body: Stmt = Loop(os_[-1], 0, y.shape[-1], 1, (Assign(acc, init), red, Store(Y, (n, m, *os_), acc))) if nd else None
    for d in reversed(range(nd - 1)):
        body = Loop(os_[d], 0, y.shape[2 + d], 1, (body,))
    body = Loop(n, 0, y.shape[0], 1, (Loop(m, 0, y.shape[1], 1, (body,)),))
    return Kernel(kernel_name(name), tuple(ins + outs), (body,))


def lower_conv(graph: Graph, node: Node) -> Kernel:
    """ONNX Conv (any spatial rank >= 1, strides, pads, dilations, auto_pad, group)."""
    from ..ir.ops import window_params

    x, w = graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1])
    bias = graph.type_of(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if x.rank < 3:
        raise UnsupportedLoweringError(f"node {node.label}: Conv needs (N, C, spatial...) input, got {x}")
    p = window_params("Conv", x, w.shape[2:], node.attrs)
    return conv_kernel(node.label, x, w, graph.type_of(node.outputs[0]), bias, p["strides"], p["dilations"],
                       p["begin"], int(node.attrs.get("group", 1)))
