"""The lowering `linalg.matmul` (memrefs) -> a tiled loop nest of npu ops, with tile sizes from unit 07's
accelerator config: the schedule of unit 07's driver, written as IR.

    for m0 in 0..M step TM:                       mt = min(TM, M - m0)
        for k0 in 0..K step TK:                   dma_load A[m0, k0] sizes [mt, kt] to "in" [mt * k0 * isz]
        for n0 in 0..N step TN:                   nt = min(TN, N - n0)
            for k0 in 0..K step TK:               kt = min(TK, K - k0)
                dma_load B[k0, n0] sizes [kt, nt] to "wt" [0]
                npu.matmul in[mt * k0 * isz], wt[0], out[0] sizes [mt, nt, kt] acc (k0 > 0)
            dma_store C[m0, n0] sizes [mt, nt] from out [0]

(TM, TN, TK) come from `commands.tile_sizes(M, N, K, config)`; `isz` is the operand size in bytes.
`LowerMatmulToNpu(config, emit)` is the RewritePattern; `emit(nb, A, B, C, config)` writes the loop nest (the
library's is `emit_matmul_schedule`).
"""
from __future__ import annotations

from typing import Any, Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, MemRefType, i8
from xdsl.dialects.linalg.ops import MatmulOp as LinalgMatmul
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from ...accel import AccelConfig, AccelError
from .build import NpuBuilder
from .commands import tile_sizes
from .dialect import constant_index, element


def matmul_shapes(op: LinalgMatmul, config: AccelConfig) -> tuple[int, int, int]:
    """(M, N, K) of a memref linalg.matmul the accelerator can run; AccelError saying why when it cannot."""
    a, b, c = (v.type for v in (*op.inputs, *op.outputs))
    if not all(isinstance(t, MemRefType) for t in (a, b, c)):
        raise AccelError("linalg.matmul must be on memrefs (bufferize first) to lower to npu DMA commands")
    (M, K), (K2, N) = a.get_shape(), b.get_shape()
    if K != K2 or tuple(c.get_shape()) != (M, N):
        raise AccelError(f"linalg.matmul shapes {a}, {b} -> {c} do not form (M, K) x (K, N) -> (M, N)")
    want = {"int8": ("i8", "i32"), "float32": ("f32", "f32")}[config.dtype]
    got = (element(a), element(c))
    if element(b) != got[0] or got != want:
        raise AccelError(f"the accelerator is configured for {config.dtype} ({want[0]} operands, {want[1]} results); "
                         f"this matmul is {element(a)} x {element(b)} -> {element(c)}")
    return M, N, K


def operand_type(config: AccelConfig):
    """The npu.matmul dtype attribute of a config (i8 or f32)."""
    return i8 if config.dtype == "int8" else Float32Type()


def emit_matmul_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Write the driver's loop nest (module docstring) for C = A @ B with the builder."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    TM, TN, TK = tile_sizes(M, N, K, config)
    isz = config.operand_dtype.itemsize
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            nb.dma_load(A, m0, k0, mt, nb.min(TK, nb.sub(K, k0)), "in", nb.mul(nb.mul(mt, k0), isz))
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                kt = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(nb.mul(mt, k0), isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)


Emit = Callable[[NpuBuilder, Any, Any, Any, AccelConfig], None]


class FoldIndexMin(RewritePattern):
    """`arith.minsi %x, %x` -> `%x`, and `arith.minsi` of two constants -> a constant: the edge sizes of a loop that
    canonicalize removed (one iteration), which xDSL's canonicalize does not fold."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.MinSIOp, rewriter: PatternRewriter) -> None:
        a, b = constant_index(op.lhs), constant_index(op.rhs)
        if op.lhs is op.rhs:
            rewriter.replace(op, [], [op.lhs])
        elif a is not None and b is not None:
            rewriter.replace(op, arith.ConstantOp(IntegerAttr(min(a, b), op.result.type)))


class LowerMatmulToNpu(RewritePattern):
    """Replace each memref `linalg.matmul` by the npu loop nest `emit` writes (the driver's schedule by default)."""

    def __init__(self, config: AccelConfig, emit: Emit = emit_matmul_schedule) -> None:
        self.config = config
        self.emit = emit

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LinalgMatmul, rewriter: PatternRewriter) -> None:
        matmul_shapes(op, self.config)
        (A, B), (C,) = op.inputs, op.outputs
        self.emit(NpuBuilder(InsertPoint.before(op)), A, B, C, self.config)
        rewriter.erase(op)


def lower_to_npu(module: Any, config: AccelConfig, emit: Emit = emit_matmul_schedule, tidy: bool = True) -> Any:
    """Apply LowerMatmulToNpu to every linalg.matmul of an xDSL module (in place), then (`tidy`) canonicalize and
    CSE away the repeated constants the builder wrote, and fold the edge-size minimums that became constant
    (FoldIndexMin); returns the module, verified."""
    from xdsl.transforms.canonicalize import CanonicalizePass
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    from ..xdsl_ir import context
    from .dialect import NPU

    PatternRewriteWalker(LowerMatmulToNpu(config, emit), apply_recursively=False).rewrite_module(module)
    if tidy:
        ctx = context([NPU])
        CanonicalizePass().apply(ctx, module)
        CommonSubexpressionElimination().apply(ctx, module)
        PatternRewriteWalker(FoldIndexMin()).rewrite_module(module)
        CommonSubexpressionElimination().apply(ctx, module)
    module.verify()
    return module
