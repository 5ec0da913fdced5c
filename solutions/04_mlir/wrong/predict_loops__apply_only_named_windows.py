# WRONG ANSWER (predict_loops): index-arithmetic rule: one affine.apply per index that is an expression, read off the indexing maps of ANY op.
# This answer hard-codes it from the op's name (2 for conv and pooling, whose input is indexed h*s+kh and
# w*s+kw) and writes none for a linalg.generic, whatever its maps say (a 1-D convolution written as a generic,
# affine_map<(d0, d1) -> (d0 + d1)>, needs one).
from xdsl.dialects.builtin import MemRefType
from xdsl.ir.affine import AffineDimExpr

# The implicit payloads of the named ops, read off `mlir-opt --linalg-generalize-named-ops`:
# which operands (ins..., outs...) the payload reads, and the ops it runs.
_NAMED = {
    "linalg.matmul": ([True, True, True], ["arith.mulf", "arith.addf"]),
    "linalg.fill": ([True, False], []),
    "linalg.transpose": ([True, False], []),
    "linalg.conv_2d_nchw_fchw": ([True, True, True], ["arith.mulf", "arith.addf"]),
    "linalg.pooling_nchw_max": ([True, False, True], ["arith.maximumf"]),
}


def _is_expr(e) -> bool:
    return not isinstance(e, AffineDimExpr)


def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    maps = [m.data for m in op.get_indexing_maps()]
    out = {"scf.for": maps[0].num_dims, "memref.store": 1}
    if op.name == "linalg.generic":
        used = [bool(list(a.uses)) for a in op.body.block.args]
        payload = [o.name for o in op.body.block.ops if o.name != "linalg.yield"]
    else:
        used, payload = _NAMED[op.name]
    out["memref.load"] = sum(1 for i, v in enumerate(op.operands) if isinstance(v.type, MemRefType) and used[i])
    out["affine.apply"] = 2 if op.name in ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max") else 0
    for p in payload:
        out[p] = out.get(p, 0) + 1
    return out
