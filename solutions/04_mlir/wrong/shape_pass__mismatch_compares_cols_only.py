# WRONG (rule 4: an add or a mul whose operand SHAPES differ fails). This compares the operands' column counts
# only (shape[-1]); a 2x3 + 4x3 add is accepted and given the shape 2x3.
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        for o in list(op.walk()):
            if not any(isinstance(r.type, UnrankedTensorType) for r in o.results):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{o.name}: an operand is unranked, its result cannot be inferred")
            if isinstance(o, TransposeOp):
                set_result_shape(o, tuple(reversed(shapes[0])))
            elif isinstance(o, (AddOp, MulOp)):
                if shapes[0][-1] != shapes[1][-1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(o, shapes[0])
            else:
                raise PassFailedException(f"{o.name}: cannot infer its result")
