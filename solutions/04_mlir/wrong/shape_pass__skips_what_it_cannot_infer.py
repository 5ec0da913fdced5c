from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Leaves a result unranked when its operands are, instead of failing."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        for inner in op.walk():     # in program order: an op's operands are inferred before it
            if not any(isinstance(r.type, UnrankedTensorType) for r in inner.results):
                continue
            shapes = [shape_of(v.type) for v in inner.operands]
            if any(s is None for s in shapes):
                continue
            if isinstance(inner, TransposeOp):
                set_result_shape(inner, tuple(reversed(shapes[0])))
            elif isinstance(inner, (AddOp, MulOp)):
                if shapes[0] != shapes[1]:
                    raise PassFailedException(f"{inner.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(inner, shapes[0])
            else:
                raise PassFailedException(f"{inner.name}: no shape rule for this op")
