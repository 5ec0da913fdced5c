from xdsl.dialects.builtin import (DenseArrayBase, Float32Type, IndexType, IntegerType, StringAttr, TypeAttribute,
                                   i1, i8)
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.utils.exceptions import VerifyException

from infopt.mlir.npu.dialect import constant_index


@irdl_op_definition
class NpuMatmul(IRDLOperation):
    """One m x n x k tile on the systolic array."""

    name = "npu.matmul"
    a_addr = operand_def(IndexType)
    b_addr = operand_def(IndexType)
    c_addr = operand_def(IndexType)
    m = operand_def(IndexType)
    n = operand_def(IndexType)
    k = operand_def(IndexType)
    acc = operand_def(IntegerType)
    tile = prop_def(DenseArrayBase)
    dataflow = prop_def(StringAttr)
    dtype = prop_def(TypeAttribute)

    def __init__(self, a_addr, b_addr, c_addr, m, n, k, acc, tile, dataflow, dtype):
        super().__init__(operands=[a_addr, b_addr, c_addr, m, n, k, acc],
                         properties={"tile": DenseArrayBase.from_list(IntegerType(64), list(tile)),
                                     "dataflow": StringAttr(dataflow), "dtype": dtype})

    def verify_(self) -> None:
        tile = list(self.tile.get_values())
        if len(tile) != 3 or any(t < 1 for t in tile):
            raise VerifyException(f"npu.matmul: tile must be three positive sizes [TM, TN, TK], got {tile}")
        if self.dataflow.data not in ("ws", "os"):
            raise VerifyException(f"npu.matmul: dataflow must be 'ws' or 'os', got {self.dataflow.data!r}")
        is_i8 = isinstance(self.dtype, IntegerType) and self.dtype.width.data == 8
        if not (is_i8 or isinstance(self.dtype, Float32Type)):
            raise VerifyException(f"npu.matmul: dtype must be i8 or f32, got {self.dtype}")
        for label, v, bound in (("m", self.m, tile[0]), ("n", self.n, tile[1]), ("k", self.k, tile[2])):
            c = constant_index(v)
            if c is not None and not 1 <= c <= bound:
                raise VerifyException(f"npu.matmul: operand {label} = {c} is outside 1..{bound}")
