# WRONG ANSWER (shape_pass): rule 5: do not call the ops' infer_shapes methods. Close variant of cached_library_infer_methods: the methods
# are stored in a class attribute of the pass, bound when the class is defined, and called on each op after a
# mismatch check of its own.
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of


def _unranked(o) -> bool:
    return any(isinstance(r.type, UnrankedTensorType) for r in o.results)


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"
    rules = {"toy.transpose": TransposeOp.infer_shapes, "toy.add": AddOp.infer_shapes, "toy.mul": MulOp.infer_shapes}

    def apply(self, ctx, op) -> None:
        for o in op.walk():
            if not _unranked(o):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if None in shapes:
                raise PassFailedException(f"{o.name}: an operand is unranked")
            if len(set(shapes)) > 1:
                raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
            type(self).rules[o.name](o)
