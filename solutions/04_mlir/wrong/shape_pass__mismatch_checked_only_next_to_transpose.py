# WRONG (rule 4: an add or a mul whose operand shapes differ fails). Reasoning that ranked operands of
# different shapes cannot even parse, and that only a transpose changes a shape, this compares the operand
# shapes only when one operand is produced by a toy.transpose. A mismatch that reaches the add through another
# op -- add(mul(t, t), c) with t = transpose(c), c non-square -- is accepted and given the LHS's shape.
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
                if any(isinstance(getattr(v, 'op', None), TransposeOp) for v in o.operands) and shapes[0] != shapes[1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(o, shapes[0])
            else:
                raise PassFailedException(f"{o.name}: cannot infer its result")
