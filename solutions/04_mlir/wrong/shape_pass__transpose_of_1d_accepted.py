# WRONG? (rule 1: transpose of an m x n operand; rule 4: when a result cannot be inferred the pass fails). A
# transpose is 2-D; this reverses whatever shape its operand has, so a transpose whose operand turns out 1-D
# (transpose(a + b) with a, b : tensor<3xf64>) gets the shape (3,) and the pass succeeds, leaving a module that
# does not verify; the library's pass fails naming toy.transpose. (Borderline: rule 4 lists two failures.)
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
                if shapes[0] != shapes[1]:
                    raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(o, shapes[0])
            else:
                raise PassFailedException(f"{o.name}: cannot infer its result")
