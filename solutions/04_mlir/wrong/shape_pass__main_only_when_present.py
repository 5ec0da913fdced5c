# WRONG ANSWER (shape_pass): rule 2: every function is inferred. This pass infers @main when the module has one, and falls back to all
# functions only when there is no main; a helper beside main is left unranked.
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of

def _unranked(o) -> bool:
    return any(isinstance(r.type, UnrankedTensorType) for r in o.results)


def _infer_op(o) -> None:
    shapes = [shape_of(v.type) for v in o.operands]
    if any(s is None for s in shapes):
        raise PassFailedException(f"{o.name}: an operand is unranked, its shape cannot be inferred")
    if isinstance(o, TransposeOp):
        set_result_shape(o, tuple(reversed(shapes[0])))
    elif isinstance(o, (AddOp, MulOp)):
        if shapes[0] != shapes[1]:
            raise PassFailedException(f"{o.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
        set_result_shape(o, shapes[0])


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        funcs = [f for f in op.ops if f.name == "func.func"]
        mains = [f for f in funcs if f.sym_name.data == "main"]
        for func in (mains or funcs):
            for o in func.walk():
                if _unranked(o):
                    _infer_op(o)
