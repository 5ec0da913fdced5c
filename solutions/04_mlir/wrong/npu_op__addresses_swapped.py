from xdsl.dialects.builtin import (DenseArrayBase, Float32Type, IndexType, IntegerType, StringAttr, TypeAttribute,
                                   i1, i8)
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.utils.exceptions import VerifyException

from infopt.mlir.npu.dialect import constant_index

@irdl_op_definition
class NpuMatmul(IRDLOperation):
    """Passes the three addresses to the base class as (c, b, a): the operands are in the wrong order."""

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

    def __init__(self, a_addr, b_addr, c_addr, m, n, k, acc, tile, dataflow, dtype):
        super().__init__(operands=[c_addr, b_addr, a_addr, m, n, k, acc],
                         properties={"tile": DenseArrayBase.from_list(IntegerType(64), list(tile)),
                                     "dataflow": StringAttr(dataflow), "dtype": dtype})

    def verify_(self) -> None:
        tile = list(self.tile.get_values())
        if len(tile) != 3 or min(tile) < 1:
            raise VerifyException(f"npu.matmul: tile must be three positive sizes [TM, TN, TK], got {tile}")
        if self.dataflow.data not in ("ws", "os"):
            raise VerifyException(f"npu.matmul: dataflow must be 'ws' or 'os', got {self.dataflow.data!r}")
        if not (self.dtype == i8 or isinstance(self.dtype, Float32Type)):
            raise VerifyException(f"npu.matmul: dtype must be i8 or f32, got {self.dtype}")
        for name, value, bound in (("m", self.m, tile[0]), ("n", self.n, tile[1]), ("k", self.k, tile[2])):
            c = constant_index(value)
            if c is not None and not 1 <= c <= bound:
                raise VerifyException(f"npu.matmul: {name} = {c} is outside 1..{bound}")
