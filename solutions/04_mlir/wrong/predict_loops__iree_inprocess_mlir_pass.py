# WRONG (rule: "Decide from the op's structure, without running mlir-opt ... inside the function"). This runs
# MLIR's own convert-linalg-to-loops -- not as the mlir-opt program, but in-process through the MLIR Python
# bindings that ship inside the iree-base-compiler wheel (iree.compiler.ir / passmanager) -- on the op's function,
# and counts what it wrote. No program starts, so a guard on subprocesses does not see it; it is still running the
# lowering instead of predicting it.
from collections import Counter


def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    import re

    from iree.compiler import ir, passmanager

    from infopt.mlir.xdsl_ir import print_ir

    fn = op.parent_op()
    text = "builtin.module {\n" + print_ir(fn, generic=True) + "\n}\n"
    with ir.Context():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse("builtin.module(func.func(convert-linalg-to-loops))").run(module.operation)
        out = module.operation.get_asm(print_generic_op_form=True)
    names = Counter(re.findall(r'"([a-z_]+\.[a-z_0-9.]+)"\(', out))
    for k in ("builtin.module", "func.func", "func.return", "arith.constant", "scf.yield"):
        names.pop(k, None)
    return dict(names)
