# WRONG ANSWER (shape_pass): rule 5: 'do not call the ops' infer_shapes methods'. This pass calls them anyway, through a table of the
# methods built when the cell runs (so the names the grader guards are not the ones it calls); the mismatch
# check is the only code of its own.
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of

# the shape rule of each op, as Toy's ShapeInference interface states it
_RULES = {TransposeOp: TransposeOp.infer_shapes, AddOp: AddOp.infer_shapes, MulOp: MulOp.infer_shapes}


def _unranked(o) -> bool:
    return any(isinstance(r.type, UnrankedTensorType) for r in o.results)


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        for o in op.walk():
            if not _unranked(o):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{o.name}: an operand is unranked")
            if len(shapes) == 2 and shapes[0] != shapes[1]:
                raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
            _RULES[type(o)](o)
