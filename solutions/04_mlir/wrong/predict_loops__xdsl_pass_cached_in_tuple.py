# WRONG ANSWER (predict_loops): rule 'without running mlir-opt or xDSL's own lowering inside the function'. This
# answer runs xDSL's ConvertLinalgToLoopsPass on a clone of the op's function and counts the result; the pass class
# is kept in a tuple made when the cell runs (so the guarded module attribute is never looked up).
from collections import Counter

import xdsl.transforms.convert_linalg_to_loops as _c2l

from infopt.mlir.xdsl_ir import context

_LOWERING = (_c2l.ConvertLinalgToLoopsPass,)


def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    from xdsl.dialects.builtin import ModuleOp

    module = ModuleOp([op.parent_op().clone()])
    _LOWERING[0]().apply(context(), module)
    counts = Counter(o.name for o in module.walk())
    for skip in ("builtin.module", "func.func", "func.return", "arith.constant", "scf.yield"):
        counts.pop(skip, None)
    return dict(counts)
