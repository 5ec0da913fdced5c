"""The Toy dialect of MLIR's tutorial, in xDSL: constant, transpose, mul, add, reshape, print on f64 tensors.

Results start unranked (`tensor<*xf64>`) where the front end cannot know their shape; ops that know how to compute
their result shape implement the ShapeInference interface (`infer_shapes`), which the shape-inference pass calls
(tutorial chapter 4).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from xdsl.dialects.builtin import (DenseIntOrFPElementsAttr, Float64Type, MemRefType, TensorType, UnrankedTensorType,
                                   f64)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.rewriter import Rewriter
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


class ShapeInference(ABC):
    """The interface of ops that can compute their result type from their operands' (tutorial chapter 4)."""

    @abstractmethod
    def infer_shapes(self) -> None:
        """Set the result's type from the operands' types (they are ranked when this is called)."""


def shape_of(t: Attribute) -> tuple[int, ...] | None:
    """The static shape of a ranked tensor type, None for `tensor<*xf64>`."""
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def set_result_shape(op: IRDLOperation, shape: tuple[int, ...]) -> None:
    """Give the op's only result the ranked type `tensor<shape x f64>`."""
    Rewriter.replace_value_with_new_type(op.results[0], TensorType(f64, list(shape)))


def _check_f64(op: IRDLOperation) -> None:
    for v in (*op.operands, *op.results):
        if not isinstance(v.type, (TensorType, UnrankedTensorType)) or not isinstance(v.type.element_type,
                                                                                         Float64Type):
            raise VerifyException(f"{op.name}: Toy values are f64 tensors, got {v.type}")


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """`%c = toy.constant dense<[[1.0, 2.0]]> : tensor<1x2xf64>`"""

    name = "toy.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    res = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser) -> "ConstantOp":
        """`toy.constant dense<...> : tensor<...>` (the attribute carries the type, as in the tutorial)."""
        return cls(parser.parse_attribute())

    def print(self, printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        _check_f64(self)
        if self.res.type != self.value.type:
            raise VerifyException(f"toy.constant: result type {self.res.type} differs from the value's {self.value.type}")


class _Binary(IRDLOperation, ShapeInference):
    lhs = operand_def()
    rhs = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($res)"

    def __init__(self, lhs, rhs):
        super().__init__(operands=[lhs, rhs], result_types=[UnrankedTensorType(f64)])

    def verify_(self) -> None:
        _check_f64(self)
        a, b = shape_of(self.lhs.type), shape_of(self.rhs.type)
        if a is not None and b is not None and a != b:
            raise VerifyException(f"{self.name}: operand shapes {a} and {b} differ (Toy has no broadcasting)")

    def infer_shapes(self) -> None:
        set_result_shape(self, shape_of(self.lhs.type))


@irdl_op_definition
class AddOp(_Binary):
    """`%r = toy.add %a, %b`: elementwise sum."""

    name = "toy.add"


@irdl_op_definition
class MulOp(_Binary):
    """`%r = toy.mul %a, %b`: elementwise product."""

    name = "toy.mul"


@irdl_op_definition
class TransposeOp(IRDLOperation, ShapeInference):
    """`%r = toy.transpose %a`: a 2-D transpose."""

    name = "toy.transpose"
    arg = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    assembly_format = "$arg attr-dict `:` type($arg) `->` type($res)"

    def __init__(self, arg):
        super().__init__(operands=[arg], result_types=[UnrankedTensorType(f64)])

    def verify_(self) -> None:
        _check_f64(self)
        s = shape_of(self.arg.type)
        if s is not None and len(s) != 2:
            raise VerifyException(f"toy.transpose: the operand must be 2-D, got shape {s}")

    def infer_shapes(self) -> None:
        set_result_shape(self, tuple(reversed(shape_of(self.arg.type))))


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """`%r = toy.reshape %a : tensor<6xf64> -> tensor<2x3xf64>`: the result type is the new shape."""

    name = "toy.reshape"
    arg = operand_def()
    res = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$arg attr-dict `:` type($arg) `->` type($res)"

    def __init__(self, arg, shape: tuple[int, ...]):
        super().__init__(operands=[arg], result_types=[TensorType(f64, list(shape))])

    def verify_(self) -> None:
        _check_f64(self)
        s = shape_of(self.arg.type)
        n = 1
        for d in self.res.type.get_shape():
            n *= d
        if s is not None:
            m = 1
            for d in s:
                m *= d
            if m != n:
                raise VerifyException(f"toy.reshape: {m} elements cannot become shape {tuple(self.res.type.get_shape())}")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """`toy.print %a`: print a tensor (after the partial lowering of chapter 5, the memref holding it)."""

    name = "toy.print"
    arg = operand_def()
    assembly_format = "$arg attr-dict `:` type($arg)"

    def __init__(self, arg):
        super().__init__(operands=[arg])

    def verify_(self) -> None:
        t = self.arg.type
        if isinstance(t, MemRefType) and isinstance(t.element_type, Float64Type):
            return
        _check_f64(self)


TOY = Dialect("toy", [ConstantOp, AddOp, MulOp, TransposeOp, ReshapeOp, PrintOp], [])
