from xdsl.dialects.builtin import (DenseArrayBase, Float32Type, IndexType, IntegerType, StringAttr, TypeAttribute,
                                   i1, i8)
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.utils.exceptions import VerifyException

from infopt.mlir.npu.dialect import constant_index


@irdl_op_definition
class NpuMatmul(IRDLOperation):
    """npu.matmul: one m x n x k tile on the systolic array."""

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
        super().__init__(operands=[a_addr, b_addr, c_addr, m, n, k, acc],
                         properties={"tile": DenseArrayBase.from_list(IntegerType(64), list(tile)),
                                     "dataflow": StringAttr(dataflow), "dtype": dtype})

    def verify_(self) -> None:
        bounds = tuple(self.tile.get_values())
        if len(bounds) != 3 or any(b < 1 for b in bounds):
            raise VerifyException(f"npu.matmul: the tile must be three positive sizes, got {list(bounds)}")
        if self.dataflow.data not in ("ws", "os"):
            raise VerifyException(f"npu.matmul: unknown dataflow {self.dataflow.data!r} (ws or os)")
        ok_int = isinstance(self.dtype, IntegerType) and self.dtype.width.data <= 8
        if not ok_int and not isinstance(self.dtype, Float32Type):
            raise VerifyException(f"npu.matmul: dtype must be i8 or f32, got {self.dtype}")
        for label, operand, bound in zip(("m", "n", "k"), (self.m, self.n, self.k), bounds):
            value = constant_index(operand)
            if value is not None and (value < 1 or value > bound):
                raise VerifyException(f"npu.matmul: operand {label} = {value} outside 1..{bound}")
