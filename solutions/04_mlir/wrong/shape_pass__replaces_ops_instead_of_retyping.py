# WRONG ANSWER (shape_pass): rule 3: 'only result types change: no op is added, removed or moved'. This pass builds a NEW op with the
# ranked result type for every inferred op and replaces the old one (removing an op and adding another), instead
# of retyping the result in place with set_result_shape.
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of

from xdsl.dialects.builtin import TensorType, f64
from xdsl.rewriter import Rewriter


def _unranked(o) -> bool:
    return any(isinstance(r.type, UnrankedTensorType) for r in o.results)


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        for o in list(op.walk()):
            if not _unranked(o):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{o.name}: an operand is unranked")
            if isinstance(o, TransposeOp):
                shape = tuple(reversed(shapes[0]))
            else:
                if shapes[0] != shapes[1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                shape = shapes[0]
            new = type(o).create(operands=list(o.operands), result_types=[TensorType(f64, list(shape))],
                                 properties=dict(o.properties), attributes=dict(o.attributes))
            Rewriter.replace_op(o, new)
