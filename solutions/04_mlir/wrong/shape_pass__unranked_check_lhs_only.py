# WRONG (rule 4: an op whose operands stay unranked fails the pass). For toy.add / toy.mul this checks only the
# LHS for being unranked (the result's shape is taken from it); an add or mul whose RHS is an unranked function
# argument gets the LHS's shape and the pass succeeds, where it must fail naming the op.
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
            if shapes[0] is None:
                raise PassFailedException(f"{o.name}: an operand is unranked, its result cannot be inferred")
            if isinstance(o, TransposeOp):
                set_result_shape(o, tuple(reversed(shapes[0])))
            elif isinstance(o, (AddOp, MulOp)):
                if shapes[1] is not None and shapes[0] != shapes[1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(o, shapes[0])
            else:
                raise PassFailedException(f"{o.name}: cannot infer its result")
