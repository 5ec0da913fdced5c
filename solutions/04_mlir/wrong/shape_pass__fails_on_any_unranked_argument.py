# WRONG (rule 4: fail only when a result cannot be inferred). This checks each function's signature first and
# fails as soon as a function has a tensor<*xf64> argument, naming the first toy op of that function, even when
# that argument feeds no op with a result to infer (only a toy.print, or nothing); such a function is fine.
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
        for fn in list(op.ops):
            if any(isinstance(a.type, UnrankedTensorType) for a in fn.body.block.args):
                culprit = next((x.name for x in fn.body.block.ops if x.name.startswith('toy.') and x.name != 'toy.constant'), fn.sym_name.data)
                raise PassFailedException(f"{culprit}: the function @{fn.sym_name.data} takes an unranked argument")
        for o in list(op.walk()):
            if not any(isinstance(r.type, UnrankedTensorType) for r in o.results):
                continue
            shapes = [shape_of(v.type) for v in o.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{o.name}: an operand is unranked, its result cannot be inferred")
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
