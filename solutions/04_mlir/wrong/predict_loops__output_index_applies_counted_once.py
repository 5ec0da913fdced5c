# WRONG (rule 'index arithmetic' read against what mlir-opt writes). An output that the payload reads is both
# loaded and stored, and mlir-opt computes its indices once for the load and once for the store; this counts
# the output's expression indices once. For an output map with an expression (outs indexed (d0 * 2, d1), payload
# reading %out) mlir-opt writes 2 affine.apply and this predicts 1. (The statement's wording 'one affine.apply
# per index of a loaded or stored operand' is ambiguous here; mlir-opt decides.)
from xdsl.dialects.builtin import MemRefType
from xdsl.ir.affine import AffineDimExpr

_NAMED = {
    "linalg.matmul": ((True, True, True), ("arith.mulf", "arith.addf")),
    "linalg.fill": ((False, False), ()),
    "linalg.transpose": ((True, False), ()),
    "linalg.conv_2d_nchw_fchw": ((True, True, True), ("arith.mulf", "arith.addf")),
    "linalg.pooling_nchw_max": ((True, False, True), ("arith.maximumf",)),
}


def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    maps = [m.data for m in op.get_indexing_maps()]
    operands = list(op.operands)
    if op.name == "linalg.generic":
        read = [bool(a.uses) for a in op.body.block.args]
        payload = [o.name for o in op.body.block.ops if o.name != "linalg.yield"]
    else:
        read, payload = _NAMED[op.name]
    counts = {"scf.for": maps[0].num_dims, "memref.store": 1, "memref.load": 0, "affine.apply": 0}
    last = len(operands) - 1
    for i, (v, m) in enumerate(zip(operands, maps)):
        exprs = sum(not isinstance(e, AffineDimExpr) for e in m.results)
        if read[i] and isinstance(v.type, MemRefType):
            counts["memref.load"] += 1
            counts["affine.apply"] += exprs
        elif i == last:
            counts["affine.apply"] += exprs
    for p in payload:
        counts[p] = counts.get(p, 0) + 1
    return counts
