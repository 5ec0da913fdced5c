"""The `npu` dialect in xDSL: the accelerator's DMA and tile-matmul commands as MLIR operations.

    npu.dma_load %A[%row, %col] sizes [%rows, %cols] to "in" [%addr] : memref<100x50xi8>
    npu.matmul %a, %b, %c sizes [%m, %n, %k] acc %first {tile = array<i64: 16, 8, 8>, dataflow = "ws", dtype = i8}
    npu.dma_store %C[%row, %col] sizes [%rows, %cols] from out [%addr] : memref<100x30xi32>

Sizes and SRAM byte addresses are `index` operands (edge tiles are smaller, so they are computed in the loops);
the tile bounds, dataflow and operand type are attributes fixed by the accelerator. Verifiers reject what the
hardware cannot take, with messages that say which operand or attribute is wrong.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (BoolAttr, DenseArrayBase, Float32Type, IndexType, IntegerAttr, IntegerType,
                                   MemRefType, Signedness, StringAttr, TypeAttribute, i1)
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

BUFFERS = ("in", "wt", "out")
DATAFLOWS = ("ws", "os")


def type_name(e) -> str:
    """'i8', 'i32' or 'f32' for a scalar type (else its text)."""
    if isinstance(e, IntegerType):
        return f"i{e.width.data}"
    return "f32" if isinstance(e, Float32Type) else str(e)


def element(t) -> str:
    """'i8', 'i32' or 'f32' for the element type of a memref (else its text)."""
    return type_name(t.element_type)


def constant_index(v: SSAValue) -> int | None:
    """The value of an index operand defined by `arith.constant`, else None (computed in a loop)."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _check_region(op: IRDLOperation, memref: SSAValue, row: SSAValue, col: SSAValue, rows: SSAValue,
                  cols: SSAValue) -> None:
    """The DRAM region is a 2-D block inside the memref (checked where the operands are constants)."""
    shape = memref.type.get_shape()
    if len(shape) != 2:
        raise VerifyException(f"{op.name}: the DRAM tensor must be a 2-D memref, got {memref.type}")
    for what, start, size, dim in (("row", row, rows, 0), ("column", col, cols, 1)):
        s, n = constant_index(start), constant_index(size)
        if n is not None and n < 1:
            raise VerifyException(f"{op.name}: the {what} count must be >= 1, got {n}")
        if s is not None and n is not None and s + n > shape[dim]:
            raise VerifyException(f"{op.name}: {what}s {s}..{s + n - 1} are outside the tensor's {shape[dim]} {what}s")


@irdl_op_definition
class DmaLoadOp(IRDLOperation):
    """DMA a 2-D block of a DRAM tensor into an SRAM buffer ("in", "wt", or "out" for a bias) at a byte address."""

    name = "npu.dma_load"
    src = operand_def(MemRefType)
    row = operand_def(IndexType)
    col = operand_def(IndexType)
    rows = operand_def(IndexType)
    cols = operand_def(IndexType)
    addr = operand_def(IndexType)
    buffer = prop_def(StringAttr)
    repeat = opt_prop_def(IntegerAttr)

    assembly_format = ("$src `[` $row `,` $col `]` `sizes` `[` $rows `,` $cols `]` `to` $buffer `[` $addr `]` "
                       "attr-dict `:` type($src)")
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, src, row, col, rows, cols, buffer: str, addr, repeat: int = 1):
        props = {"buffer": StringAttr(buffer)}
        if repeat != 1:
            props["repeat"] = IntegerAttr(repeat, 64)
        super().__init__(operands=[src, row, col, rows, cols, addr], properties=props)

    def verify_(self) -> None:
        if self.buffer.data not in BUFFERS:
            raise VerifyException(f"npu.dma_load: buffer must be one of {BUFFERS}, got {self.buffer.data!r}")
        kind = element(self.src.type)
        allowed = ("i32", "f32") if self.buffer.data == "out" else ("i8", "f32")
        if kind not in allowed:
            raise VerifyException(f"npu.dma_load: the {self.buffer.data} SRAM holds {' or '.join(allowed)}, "
                                  f"but the tensor is {kind}")
        if self.repeat is not None and self.repeat.value.data < 1:
            raise VerifyException(f"npu.dma_load: repeat must be >= 1, got {self.repeat.value.data}")
        _check_region(self, self.src, self.row, self.col, self.rows, self.cols)


@irdl_op_definition
class DmaStoreOp(IRDLOperation):
    """DMA the `out` tile at a byte address back into a 2-D block of a DRAM tensor (ReLU on the way if asked)."""

    name = "npu.dma_store"
    dst = operand_def(MemRefType)
    row = operand_def(IndexType)
    col = operand_def(IndexType)
    rows = operand_def(IndexType)
    cols = operand_def(IndexType)
    addr = operand_def(IndexType)
    relu = opt_prop_def(BoolAttr)

    assembly_format = ("$dst `[` $row `,` $col `]` `sizes` `[` $rows `,` $cols `]` `from` `out` `[` $addr `]` "
                       "attr-dict `:` type($dst)")
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dst, row, col, rows, cols, addr, relu: bool = False):
        props = {"relu": BoolAttr.from_bool(True)} if relu else {}
        super().__init__(operands=[dst, row, col, rows, cols, addr], properties=props)

    def verify_(self) -> None:
        kind = element(self.dst.type)
        if kind not in ("i32", "f32"):
            raise VerifyException(f"npu.dma_store: results are i32 (int8 operands) or f32, but the tensor is {kind}")
        _check_region(self, self.dst, self.row, self.col, self.rows, self.cols)


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """One m x n x k tile on the systolic array: in[a] (m x k) times wt[b] (k x n) into out[c] (+= when acc)."""

    name = "npu.matmul"
    a_addr = operand_def(IndexType)
    b_addr = operand_def(IndexType)
    c_addr = operand_def(IndexType)
    m = operand_def(IndexType)
    n = operand_def(IndexType)
    k = operand_def(IndexType)
    acc = operand_def(i1)
    tile = prop_def(DenseArrayBase)
    dataflow = prop_def(StringAttr)
    dtype = prop_def(TypeAttribute)

    assembly_format = "$a_addr `,` $b_addr `,` $c_addr `sizes` `[` $m `,` $n `,` $k `]` `acc` $acc attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, a_addr, b_addr, c_addr, m, n, k, acc, tile: tuple[int, int, int], dataflow: str, dtype):
        super().__init__(operands=[a_addr, b_addr, c_addr, m, n, k, acc],
                         properties={"tile": DenseArrayBase.from_list(IntegerType(64), list(tile)),
                                     "dataflow": StringAttr(dataflow), "dtype": dtype})

    def verify_(self) -> None:
        tile = self.tile.get_values()
        if len(tile) != 3 or min(tile) < 1:
            raise VerifyException(f"npu.matmul: tile must be [TM, TN, TK], three positive sizes, got {list(tile)}")
        if self.dataflow.data not in DATAFLOWS:
            raise VerifyException(f"npu.matmul: dataflow must be 'ws' or 'os', got {self.dataflow.data!r}")
        signless_i8 = (isinstance(self.dtype, IntegerType) and self.dtype.width.data == 8
                       and self.dtype.signedness.data == Signedness.SIGNLESS)   # i8, not si8 or ui8
        if not (signless_i8 or isinstance(self.dtype, Float32Type)):
            raise VerifyException(f"npu.matmul: dtype must be i8 or f32 (the array's operand types), got {self.dtype}")
        for name, v, bound in (("m", self.m, tile[0]), ("n", self.n, tile[1]), ("k", self.k, tile[2])):
            c = constant_index(v)
            if c is not None and not 1 <= c <= bound:
                raise VerifyException(f"npu.matmul: {name} = {c} is outside 1..{bound} (its tile bound)")


NPU = Dialect("npu", [DmaLoadOp, DmaStoreOp, MatmulOp], [])
