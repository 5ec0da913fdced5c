# WRONG (rule 'loads': one memref.load per memref OPERAND whose element the payload reads). This counts the
# distinct memref values that are read, so a generic given the same buffer twice (ins(%a, %a)) is predicted
# to load once; mlir-opt writes one load per operand (two).
from xdsl.dialects.builtin import MemRefType
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr

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
    _seen = []
    for i, (v, m) in enumerate(zip(operands, maps)):
        exprs = sum(not isinstance(e, (AffineDimExpr, AffineConstantExpr)) for e in m.results)
        if i == last:                        # the store
            counts["affine.apply"] += exprs
        if read[i] and isinstance(v.type, MemRefType):
            if any(v is u for u in _seen):
                continue
            _seen.append(v)
            counts["memref.load"] += 1
            counts["affine.apply"] += exprs
    for p in payload:
        counts[p] = counts.get(p, 0) + 1
    return counts
