"""A small builder for the index arithmetic and loops a lowering writes: constants, +, -, *, min, >, `scf.for`,
and the npu ops, appended at an insertion point. Python ints are turned into `arith.constant`s, so a lowering reads
like the schedule it implements:

    nb = NpuBuilder(InsertPoint.before(matmul))
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        nb.dma_load(A, m0, 0, mt, K, "in", 0)
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from .dialect import DmaLoadOp, DmaStoreOp, MatmulOp

class NpuBuilder:
    """Builds index arithmetic, `scf.for` loops and npu ops at an insertion point (ints become constants)."""

    def __init__(self, insertion_point: InsertPoint) -> None:
        self.builder = Builder(insertion_point)

    def _insert(self, op):
        self.builder.insert(op)
        return op

    def index(self, v: "SSAValue | int") -> SSAValue:
        """`v` as an index SSA value (a Python int becomes an `arith.constant ... : index`)."""
        if isinstance(v, SSAValue):
            return v
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"expected an index SSA value or an int, got {type(v).__name__}")
        return self._insert(arith.ConstantOp(IntegerAttr(v, IndexType()))).result

    def add(self, a, b) -> SSAValue:
        """a + b (index)."""
        return self._insert(arith.AddiOp(self.index(a), self.index(b))).result

    def sub(self, a, b) -> SSAValue:
        """a - b (index)."""
        return self._insert(arith.SubiOp(self.index(a), self.index(b))).result

    def mul(self, a, b) -> SSAValue:
        """a * b (index)."""
        return self._insert(arith.MuliOp(self.index(a), self.index(b))).result

    def min(self, a, b) -> SSAValue:
        """min(a, b) (signed index)."""
        return self._insert(arith.MinSIOp(self.index(a), self.index(b))).result

    def greater(self, a, b) -> SSAValue:
        """a > b, an i1."""
        return self._insert(arith.CmpiOp(self.index(a), self.index(b), "sgt")).result

    @contextmanager
    def loop(self, lower, upper, step) -> Iterator[SSAValue]:
        """`scf.for %iv = lower to upper step step { ... }`: ops built inside the `with` go into its body."""
        lb, ub, st = self.index(lower), self.index(upper), self.index(step)
        body = Block(arg_types=[IndexType()])
        self._insert(scf.ForOp(lb, ub, st, [], body))
        body.add_op(scf.YieldOp())
        saved = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.before(body.last_op)
        try:
            yield body.args[0]
        finally:
            self.builder.insertion_point = saved

    def dma_load(self, src: SSAValue, row, col, rows, cols, buffer: str, addr, repeat: int = 1) -> DmaLoadOp:
        """`npu.dma_load src[row, col] sizes [rows, cols] to buffer [addr]`."""
        return self._insert(DmaLoadOp(src, self.index(row), self.index(col), self.index(rows), self.index(cols),
                                      buffer, self.index(addr), repeat))

    def matmul(self, a_addr, b_addr, c_addr, m, n, k, acc: SSAValue, tile: tuple[int, int, int], dataflow: str,
               dtype) -> MatmulOp:
        """`npu.matmul a, b, c sizes [m, n, k] acc %acc {tile, dataflow, dtype}`."""
        return self._insert(MatmulOp(self.index(a_addr), self.index(b_addr), self.index(c_addr), self.index(m),
                                     self.index(n), self.index(k), acc, tile, dataflow, dtype))

    def dma_store(self, dst: SSAValue, row, col, rows, cols, addr, relu: bool = False) -> DmaStoreOp:
        """`npu.dma_store dst[row, col] sizes [rows, cols] from out [addr]`."""
        return self._insert(DmaStoreOp(dst, self.index(row), self.index(col), self.index(rows), self.index(cols),
                                       self.index(addr), relu))
