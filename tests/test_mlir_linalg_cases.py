"""infopt.mlir.linalg_cases: random linalg ops of every kind lower with --convert-linalg-to-loops to the loops,
loads, stores, index computations and payload ops their structure says."""
import numpy as np
import pytest

from infopt.mlir.linalg_cases import KINDS, cases_module, counted, loops_counts, random_linalg_case, split_functions
from infopt.mlir.xdsl_ir import parse_module

NAMED_LOOPS = {"linalg.matmul": 3, "linalg.conv_2d_nchw_fchw": 7, "linalg.pooling_nchw_max": 6}


def structural(op) -> dict:
    """What the op's structure says the loops contain (the rule the notebook's exercise teaches)."""
    block = op.body.block
    n_in = len(op.inputs)
    if op.name in NAMED_LOOPS:
        loops = NAMED_LOOPS[op.name]
        loads = {"linalg.matmul": 3, "linalg.conv_2d_nchw_fchw": 3, "linalg.pooling_nchw_max": 2}[op.name]
        payload = {"linalg.matmul": ["arith.mulf", "arith.addf"], "linalg.conv_2d_nchw_fchw": ["arith.mulf", "arith.addf"],
                   "linalg.pooling_nchw_max": ["arith.maximumf"]}[op.name]
        applies = 0 if op.name == "linalg.matmul" else 2
    elif op.name in ("linalg.fill", "linalg.transpose"):
        loops = len(op.outputs[0].type.get_shape())
        loads, payload, applies = (0 if op.name == "linalg.fill" else 1), [], 0
    else:
        loops = len(op.iterator_types)
        loads = sum(bool(a.uses) for a in block.args)
        payload = [o.name for o in block.ops if o.name != "linalg.yield"]
        applies = 0
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1, "affine.apply": applies}
    for p in payload:
        out[p] = out.get(p, 0) + 1
    return {k: v for k, v in sorted(out.items()) if v}


@pytest.mark.parametrize("seed", range(6))
def test_every_kind_lowers_as_its_structure_says(seed):
    rng = np.random.default_rng(seed)
    fns = [random_linalg_case(rng, kind, f"{kind}_{seed}", unit_dim=seed % 2 == 0) for kind in KINDS]
    text = cases_module(fns)
    truth = loops_counts(text)
    module = parse_module(text)
    for f in module.ops:
        op = next(o for o in f.body.block.ops if o.name.startswith("linalg."))
        assert structural(op) == truth[f.sym_name.data], (f.sym_name.data, str(f))


def test_helpers():
    assert list(split_functions("func.func @a() {}\nfunc.func @b() {}\n")) == ["a", "b"]
    assert counted("%0 = arith.constant 0 : index\nscf.for %i = %a to %b step %c {\n}\nfunc.return") == {"scf.for": 1}
    with pytest.raises(ValueError, match="kind must be"):
        random_linalg_case(np.random.default_rng(0), "softmax", "f")
