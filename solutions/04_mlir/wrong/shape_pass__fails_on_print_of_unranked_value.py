# WRONG (rule 4 fails the pass only when a RESULT cannot be inferred; rule 3: what the program prints stays).
# This raises PassFailedException for any op with an unranked operand, results or not: a function that just
# prints (or returns) an unranked argument has nothing to infer and is valid, but this pass fails on toy.print.
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
            if not o.name.startswith("toy."):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{o.name}: an operand is unranked, its result cannot be inferred")
            if not any(isinstance(r.type, UnrankedTensorType) for r in o.results):
                continue
            if isinstance(o, TransposeOp):
                if len(shapes[0]) != 2:
                    raise PassFailedException(f"{o.name}: its operand is not 2-D")
                set_result_shape(o, tuple(reversed(shapes[0])))
            elif isinstance(o, (AddOp, MulOp)):
                if shapes[0] != shapes[1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(o, shapes[0])
            else:
                raise PassFailedException(f"{o.name}: cannot infer its result")
